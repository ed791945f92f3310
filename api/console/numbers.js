// Numbers and telephony configurations: every configuration of the organization (GET
// /organizations/telephony-configs) with its credentials exactly as the API shows them (masked by the API; the
// console has no other source), and its phone numbers (GET …/{config_id}/phone-numbers).
import { api, detailText, fmtDate, h, section, table } from './util.js';

const show = (v) => (v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export async function renderNumbers(ctx) {
  const r = await api('GET', '/organizations/telephony-configs?per_page=100');
  if (!ctx.current()) return;
  ctx.view.append(h('h1', null, 'Numbers and telephony configurations'));
  if (!r.ok) { ctx.view.append(h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))); return; }
  const configs = r.data.items || [];
  if (!configs.length) {
    ctx.view.append(section('Telephony configurations', h('p', { class: 'empty' }, 'No telephony configuration yet: add one with POST /api/v1/organizations/telephony-configs.')));
    return;
  }
  const numbers = await Promise.all(configs.map((c) => api('GET', `/organizations/telephony-configs/${c.id}/phone-numbers?per_page=100`)));
  if (!ctx.current()) return;
  configs.forEach((c, k) => {
    const creds = Object.entries(c.config || {}).filter(([key]) => key !== 'provider');
    const extra = Object.entries(c).filter(([key]) => !['id', 'name', 'provider', 'is_default_outbound', 'config', 'phone_numbers_count', 'created_at', 'updated_at'].includes(key));
    const n = numbers[k];
    const list = n.ok ? n.data.items || [] : [];
    ctx.view.append(h('section', { dataset: { config: c.id } },
      h('h2', null, c.name, ' ', h('span', { class: 'badge muted' }, c.provider), c.is_default_outbound ? h('span', { class: 'badge ok' }, 'default outbound') : null),
      h('p', { class: 'hint' }, `Configuration ${c.id} · ${c.phone_numbers_count ?? list.length} number(s) · updated ${fmtDate(c.updated_at)}`),
      h('dl', { class: 'grid2 creds' }, [...creds, ...extra].flatMap(([key, v]) => [h('dt', null, key), h('dd', { class: 'mono', dataset: { cred: key } }, show(v))])),
      n.ok ? (list.length ? table(['Number', 'Label', 'Inbound agent', 'Active', 'Default caller id', 'Added'], list.map((p) => h('tr', { dataset: { number: p.address_normalized } },
        h('td', { class: 'mono' }, p.address_normalized), h('td', null, p.label ?? '—'),
        h('td', null, p.inbound_agent_uuid ? h('a', { href: `#/agents/${p.inbound_agent_uuid}` }, p.inbound_agent_name || p.inbound_agent_uuid) : '—'),
        h('td', null, h('span', { class: `badge ${p.is_active ? 'ok' : 'muted'}` }, p.is_active ? 'active' : 'inactive')), h('td', null, p.is_default_caller_id ? 'yes' : 'no'), h('td', null, fmtDate(p.created_at)))), { class: 'numbers-table' })
        : h('p', { class: 'empty' }, 'No numbers in this configuration.'))
        : h('p', { class: 'message' }, detailText(n.status, n.data))));
  });
}
