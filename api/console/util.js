// Shared pieces of the console: the API client (key from local storage), a tiny element builder that never
// parses HTML (every value goes in as text), formatting and badges.
export const API = '/api/v1';
export const KEY_STORE = 'vas.apiKey'; // the same key the call page (/call) uses

export function apiKey() { return localStorage.getItem(KEY_STORE) || ''; }

/** Calls the API; answers { ok, status, data } and never throws for an HTTP error. */
export async function api(method, path, body) {
  const headers = { 'x-api-key': apiKey() };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path.startsWith('/') && !path.startsWith(API) ? `${API}${path}` : path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    return { ok: false, status: 0, data: { detail: `The service could not be reached: ${err && err.message ? err.message : err}` } };
  }
  let data = null;
  try { data = await res.json(); } catch { /* empty body */ }
  return { ok: res.ok, status: res.status, data };
}

/** The API's own error detail, in words: a string, FastAPI-style 422 arrays, or {error, details}. */
export function detailText(status, data) {
  const d = data && data.detail !== undefined ? data.detail : data;
  if (status === 401) return 'The API key was not accepted: enter a valid key above.';
  if (typeof d === 'string') return d;
  if (Array.isArray(d)) return d.map((e) => `${(e.loc || []).join('.') || 'request'}: ${e.msg || JSON.stringify(e)}`).join('; ');
  if (d && typeof d === 'object') {
    const list = d.details || d.errors;
    if (Array.isArray(list)) return `${d.error || 'Invalid'}: ${list.map((e) => `${e.path ?? (e.loc || []).join('.')}: ${e.message ?? e.msg}`).join('; ')}`;
    return d.error_message || d.message || d.error || JSON.stringify(d);
  }
  return `Request failed (${status})`;
}

/** h('a', { href, class, onclick, dataset: {…} }, 'text', child, [children]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

export function fmtDate(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}
/** short form for tables: 'Nov 26, 06:41:15' (the year only when it is not this year) */
export function fmtShort(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const year = d.getFullYear() === new Date().getFullYear() ? undefined : 'numeric';
  return d.toLocaleString(undefined, { year, month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}
export function fmtSeconds(s) {
  if (s === null || s === undefined) return '—';
  const v = Number(s);
  if (v < 60) return `${v.toFixed(1)} s`;
  return `${Math.floor(v / 60)}:${String(Math.floor(v % 60)).padStart(2, '0')} min`;
}
export function fmtClock(s) {
  const v = Math.max(0, s);
  return `${Math.floor(v / 60)}:${(v % 60).toFixed(1).padStart(4, '0')}`;
}
export function fmtUsd(v) {
  if (v === null || v === undefined) return '—';
  const n = Number(v);
  return n < 0.01 && n > 0 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`;
}

const TONE = {
  // call status
  completed: 'ok', active: 'live', pending: 'wait', error: 'bad',
  // outcomes (connectionStatus / endedReason)
  user_hangup: 'ok', agent_hangup: 'ok', transferred: 'ok', voicemail: 'warn', silence_timeout: 'warn', max_duration: 'warn',
  pipeline_error: 'bad', cancelled: 'muted', unknown: 'bad', no_answer: 'warn', busy: 'warn', no_participant: 'warn',
  // agent-test runs
  queued: 'wait', passed: 'ok',
  // campaigns
  created: 'muted', syncing: 'wait', running: 'live', paused: 'warn', failed: 'bad',
  // breaker
  closed: 'ok', tripped: 'bad', disabled: 'muted',
};

/** A coloured pill; unknown values (rejections, carrier pass-throughs) are neutral or red when they are failures. */
export function badge(value, kind) {
  if (value === null || value === undefined) return h('span', { class: 'badge muted', dataset: { kind: kind || '' } }, '—');
  const tone = TONE[value] || (/fail|invalid|rejected|reached|insufficient|missing|validation|not_found|not_supported|unreachable/.test(value) ? 'bad' : 'muted');
  return h('span', { class: `badge ${tone}`, dataset: { kind: kind || '', value } }, value);
}

export function liveBadge() { return h('span', { class: 'badge live pulse', dataset: { kind: 'live' } }, '● live'); }

export function table(headers, rows, attrs) {
  return h('table', attrs || {}, h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))), h('tbody', null, rows));
}

export function dl(pairs, attrs) {
  return h('dl', attrs || {}, pairs.flatMap(([k, v]) => [h('dt', null, k), h('dd', { dataset: { field: k } }, v ?? '—')]));
}

export function section(title, ...children) {
  return h('section', { dataset: { section: title } }, h('h2', null, title), ...children);
}

export function pager(p, go) {
  const totalPages = p.totalPages || 0;
  return h('div', { class: 'pager' },
    h('button', { type: 'button', class: 'secondary', disabled: p.page <= 1, onclick: () => go(p.page - 1), 'data-pager': 'prev' }, '← Prev'),
    h('span', { 'data-pager': 'info' }, `Page ${p.page} of ${Math.max(totalPages, 1)} · ${p.total} total`),
    h('button', { type: 'button', class: 'secondary', disabled: p.page >= totalPages, onclick: () => go(p.page + 1), 'data-pager': 'next' }, 'Next →'));
}
