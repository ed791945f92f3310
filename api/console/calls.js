// Calls: GET /calls with every filter and sort of the API as controls, kept in the address (#/calls?status=…)
// so a filtered list can be reloaded and shared. Live calls (pending/active) are marked and the list refreshes
// itself every 5 s while one is shown.
import { api, badge, detailText, fmtSeconds, fmtShort, fmtUsd, h, liveBadge, pager, table } from './util.js';

const STATUSES = ['pending', 'active', 'completed', 'error'];
const TRANSPORTS = ['outbound', 'inbound', 'webrtc', 'websocket', 'web'];
const ENDED = ['user_hangup', 'agent_hangup', 'silence_timeout', 'max_duration', 'voicemail', 'transferred', 'pipeline_error', 'cancelled', 'unknown'];
const CONNECTION = ['completed', 'no_answer', 'busy', 'rejected', 'invalid_number', 'unreachable', 'cancelled', 'connection_failed', 'no_participant',
  'dial_failed', 'initiation_failed', 'missing_credentials', 'concurrency_limit_reached', 'insufficient_balance', 'schema_validation',
  'snapshot_validation', 'model_validation', 'agent_not_found', 'credentials_invalid', 'inbound_invalid', 'provider_not_supported'];
const SOURCES = ['api_outbound', 'api_inbound', 'dashboard_outbound', 'dashboard_inbound', 'webrtc', 'websocket', 'unknown'];
const SORTS = ['ended_at', 'created_at', 'duration_seconds', 'cost'];
const TEXT = [
  ['agent_name', 'Agent name'], ['agent_id', 'Agent id'], ['phone_number', 'Phone number'], ['call_id', 'Call id'], ['tag', 'Tags (a,b)'],
  ['campaign_id', 'Campaign id'], ['telephony_provider', 'Carrier'],
];
const LIVE = new Set(['pending', 'active']);

/** datetime-local value ↔ ISO 8601 (the API's from_date/to_date) */
const toIso = (v) => (v ? new Date(v).toISOString() : '');
const toLocal = (iso) => {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
};

function checks(name, values, query) {
  const on = new Set((query.get(name) || '').split(',').filter(Boolean));
  return h('fieldset', { class: 'checks', dataset: { filter: name } }, h('legend', null, name.replace('_', ' ')),
    values.map((v) => h('label', null, h('input', { type: 'checkbox', name, value: v, checked: on.has(v) }), v)));
}

function select(name, label, values, query, any = 'any') {
  const cur = query.get(name) || '';
  return h('label', null, label, h('select', { name }, h('option', { value: '' }, any), values.map((v) => h('option', { value: v, selected: v === cur }, v))));
}

export async function renderCalls(ctx) {
  const q = ctx.query;
  const form = h('form', { class: 'filters', id: 'call-filters' },
    h('div', { class: 'filter-row' }, checks('status', STATUSES, q), checks('transport', TRANSPORTS, q)),
    h('div', { class: 'filter-row' },
      select('connection_status', 'Connection', CONNECTION, q),
      select('ended_reason', 'Ended reason', ENDED, q),
      select('call_source', 'Source', SOURCES, q),
      select('analysis_status', 'Analysis', ['completed', 'failed', 'skipped'], q),
      select('success', 'Success', ['true', 'false'], q),
      TEXT.map(([name, label]) => h('label', null, label, h('input', { name, value: q.get(name) || '', spellcheck: 'false' }))),
      h('label', null, 'From', h('input', { type: 'datetime-local', name: 'from_date', value: toLocal(q.get('from_date')) })),
      h('label', null, 'To', h('input', { type: 'datetime-local', name: 'to_date', value: toLocal(q.get('to_date')) }))),
    h('div', { class: 'filter-row' },
      select('sort_by', 'Sort by', SORTS, q, 'ended_at (default)'),
      select('sort_order', 'Order', ['desc', 'asc'], q, 'desc (default)'),
      select('per_page', 'Per page', ['10', '25', '50', '100'], q, '50'),
      h('button', { type: 'submit' }, 'Apply'),
      h('button', { type: 'button', class: 'secondary', onclick: () => ctx.setQuery(new URLSearchParams()) }, 'Clear')));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = new URLSearchParams();
    const fd = new FormData(form);
    for (const name of ['status', 'transport']) {
      const all = fd.getAll(name);
      if (all.length) next.set(name, all.join(','));
    }
    for (const [name, value] of fd.entries()) {
      if (name === 'status' || name === 'transport' || !value) continue;
      next.set(name, name.endsWith('_date') ? toIso(value) : String(value).trim());
    }
    ctx.setQuery(next);
  });
  // checkboxes and selects apply at once; text fields on Enter / Apply
  form.addEventListener('change', (e) => { if (e.target.matches('input[type=checkbox], select')) form.requestSubmit(); });

  const results = h('div', { id: 'call-results' });
  ctx.view.append(h('section', null, h('h1', null, 'Calls'), form), results);

  let timer = null;
  const load = async () => {
    const r = await api('GET', `/calls?${q.toString()}`);
    if (!ctx.current()) return;
    if (!r.ok) {
      results.replaceChildren(h('p', { class: 'message', role: 'alert', dataset: { error: String(r.status) } }, detailText(r.status, r.data)));
      return;
    }
    const items = r.data.items || [];
    const rows = items.map((c) => h('tr', { dataset: { callId: c.callId, status: c.status }, class: LIVE.has(c.status) ? 'live-row' : '' },
      h('td', { class: 'nowrap', title: c.createdAt }, fmtShort(c.createdAt)),
      h('td', null, h('a', { href: `#/calls/${encodeURIComponent(c.callId)}`, class: 'mono' }, c.callId.slice(0, 8))),
      h('td', null, c.agentName || '—'),
      h('td', null, c.transport),
      h('td', null, badge(c.status, 'status'), LIVE.has(c.status) ? liveBadge() : null),
      h('td', null, badge(c.connectionStatus, 'connection')),
      h('td', null, badge(c.endedReason, 'ended')),
      h('td', { class: 'num' }, fmtSeconds(c.durationSeconds)),
      h('td', { class: 'num' }, fmtUsd(c.cost)),
      h('td', null, (c.tags || []).map((t) => h('span', { class: 'tag' }, t)))));
    const go = (page) => { const n = new URLSearchParams(q); n.set('page', String(page)); ctx.setQuery(n); };
    results.replaceChildren(h('section', null,
      items.length ? table(['Created', 'Call', 'Agent', 'Transport', 'Status', 'Connection', 'Ended reason', 'Duration', 'Cost', 'Tags'], rows, { id: 'calls-table' })
        : h('p', { class: 'empty', id: 'no-calls' }, 'No calls match these filters.'),
      pager(r.data, go)));
    clearTimeout(timer);
    if (items.some((c) => LIVE.has(c.status))) timer = setTimeout(() => void load(), 5000);
  };
  ctx.onLeave(() => clearTimeout(timer));
  await load();
}
