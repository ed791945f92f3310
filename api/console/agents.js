// Agents: the list (GET /agents), one agent as formatted JSON that can be checked (POST /agents/preview-snapshot)
// and saved (PATCH /agents/{uuid}) with the API's own validation errors shown, and a browser test call through
// the call page (/call?agent=<uuid>: POST /agents/{uuid}/test-call + WebRTC), and its Tests page (tests.js).
import { api, detailText, fmtDate, h, pager, section, table } from './util.js';

const statusBadge = (s) => h('span', { class: `badge ${s === 'active' ? 'ok' : 'muted'}`, dataset: { kind: 'status', value: s } }, s);

export async function renderAgents(ctx) {
  const page = Number(ctx.query.get('page') || 1);
  const name = ctx.query.get('name') || '';
  const qs = new URLSearchParams({ page: String(page), per_page: '25' });
  if (name) qs.set('name', name);
  const r = await api('GET', `/agents?${qs}`);
  if (!ctx.current()) return;
  const search = h('form', { class: 'filter-row', id: 'agent-search' }, h('label', null, 'Name', h('input', { name: 'name', value: name })), h('button', { type: 'submit' }, 'Search'));
  search.addEventListener('submit', (e) => { e.preventDefault(); const n = new URLSearchParams(); const v = new FormData(search).get('name'); if (v) n.set('name', String(v)); ctx.setQuery(n); });
  ctx.view.append(h('section', null, h('h1', null, 'Agents'), search));
  if (!r.ok) { ctx.view.append(h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))); return; }
  const items = r.data.items || [];
  const rows = items.map((a) => {
    const c = a.config || {};
    return h('tr', { dataset: { agent: a.uuid } },
      h('td', null, h('a', { href: `#/agents/${a.uuid}` }, c.name || a.uuid)),
      h('td', null, statusBadge(a.status)),
      h('td', null, `${c.llm?.provider ?? '—'} / ${c.llm?.model ?? '—'}`),
      h('td', null, c.stt?.provider ?? '—'), h('td', null, c.tts?.provider ?? '—'),
      h('td', null, (c.tools || []).length),
      h('td', null, fmtDate(a.updatedAt)),
      h('td', null, h('a', { href: `/call?agent=${encodeURIComponent(a.uuid)}`, class: 'button secondary', dataset: { testCall: a.uuid } }, 'Test call'), ' ',
        h('a', { href: `#/agents/${encodeURIComponent(a.uuid)}/tests`, class: 'button secondary', dataset: { tests: a.uuid } }, 'Tests')));
  });
  const go = (p) => { const n = new URLSearchParams(ctx.query); n.set('page', String(p)); ctx.setQuery(n); };
  ctx.view.append(section('Saved agents', items.length ? table(['Name', 'Status', 'LLM', 'STT', 'TTS', 'Tools', 'Updated', ''], rows, { id: 'agents-table' })
    : h('p', { class: 'empty' }, 'No agents yet: create one with POST /api/v1/agents.'), pager(r.data, go)));
}

export async function renderAgent(ctx, uuid) {
  const r = await api('GET', `/agents/${encodeURIComponent(uuid)}`);
  if (!ctx.current()) return;
  ctx.view.append(h('p', null, h('a', { href: '#/agents' }, '← Agents')));
  if (!r.ok) { ctx.view.append(h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))); return; }
  const a = r.data;
  const editor = h('textarea', { id: 'agent-json', class: 'json', spellcheck: 'false', rows: 28 }, JSON.stringify(a.config, null, 2));
  const out = h('div', { id: 'agent-result', role: 'status' });
  const errors = (status, data) => {
    const d = data && data.detail;
    const list = d && typeof d === 'object' && !Array.isArray(d) ? d.details : Array.isArray(d) ? d : null;
    out.replaceChildren(h('div', { class: 'message', dataset: { status: String(status) } },
      h('strong', null, `${status}: ${d && typeof d === 'object' && !Array.isArray(d) ? d.error ?? 'invalid' : detailText(status, data)}`),
      list ? h('ul', { id: 'agent-errors' }, list.map((e) => h('li', null, h('code', null, e.path ?? (e.loc || []).join('.')), ' ', e.message ?? e.msg, e.type ? h('span', { class: 'hint' }, ` (${e.type})`) : null))) : null));
  };
  const parsed = () => {
    try { return JSON.parse(editor.value); } catch (err) { out.replaceChildren(h('p', { class: 'message' }, `Not JSON: ${err.message}`)); return null; }
  };
  const check = async () => {
    const config = parsed();
    if (!config) return;
    const res = await api('POST', '/agents/preview-snapshot', { agent: config });
    if (res.ok) out.replaceChildren(h('p', { class: 'ok-note' }, 'Valid: POST /agents/preview-snapshot accepted this config.'));
    else errors(res.status, res.data);
  };
  const save = async () => {
    const config = parsed();
    if (!config) return;
    const res = await api('PATCH', `/agents/${encodeURIComponent(uuid)}`, config);
    if (res.ok) {
      editor.value = JSON.stringify(res.data.config, null, 2);
      out.replaceChildren(h('p', { class: 'ok-note' }, `Saved at ${fmtDate(res.data.updatedAt)} (PATCH /agents/${uuid}).`));
    } else errors(res.status, res.data);
  };
  ctx.view.append(h('section', null,
    h('h1', null, a.config?.name || a.uuid, ' ', statusBadge(a.status)),
    h('p', { class: 'hint' }, h('span', { class: 'mono' }, a.uuid), ` · created ${fmtDate(a.createdAt)} · updated ${fmtDate(a.updatedAt)}`),
    h('div', { class: 'row' },
      h('a', { href: `/call?agent=${encodeURIComponent(a.uuid)}`, class: 'button', id: 'test-call' }, 'Place a browser test call'),
      h('a', { href: `#/agents/${encodeURIComponent(a.uuid)}/tests`, class: 'button secondary', id: 'agent-tests' }, 'Tests'),
      h('a', { href: `#/calls?agent_id=${encodeURIComponent(a.uuid)}`, class: 'button secondary' }, 'Calls of this agent'))));
  ctx.view.append(section('Configuration (resolved, JSON)',
    h('p', { class: 'hint' }, 'Edit and check it against the API\'s validation, or save it (PATCH merges objects and replaces lists; the webhook secret is never shown).'),
    editor,
    h('div', { class: 'row' }, h('button', { type: 'button', id: 'check-agent', class: 'secondary', onclick: () => void check() }, 'Check'), h('button', { type: 'button', id: 'save-agent', onclick: () => void save() }, 'Save')),
    out));
}
