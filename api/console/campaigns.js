// Campaigns: state, contacts by status as one bar, retries due, circuit-breaker state, start/pause/resume, and the
// campaign's workflow in the Temporal Web UI (GET /campaign, GET /campaign/{id}/progress, POST …/pause|resume).
import { api, badge, detailText, dl, fmtDate, h, pager, section, table } from './util.js';

const PARTS = [['done', 'Done'], ['dialing', 'Dialing'], ['retry', 'Waiting to retry'], ['queued', 'Queued']];

function progressBar(p, c) {
  const total = Math.max(p ? p.contacts.total : c.total_rows || 0, 1);
  const counts = p ? p.contacts : { done: c.processed_rows, dialing: 0, retry: 0, queued: Math.max(0, (c.total_rows || 0) - c.processed_rows) };
  return h('div', { class: 'progress', role: 'img', 'aria-label': PARTS.map(([k, l]) => `${l} ${counts[k]}`).join(', '), dataset: { campaignProgress: c.id } },
    PARTS.map(([k, label]) => (counts[k] ? h('span', { class: `part ${k}`, style: { width: `${(counts[k] / total) * 100}%` }, title: `${label}: ${counts[k]}`, dataset: { part: k, count: counts[k] } }) : null)));
}

function breaker(p) {
  if (!p) return '—';
  const b = p.circuit_breaker;
  const window = b.calls_in_window == null ? '' : ` · window now: ${b.failures_in_window} of ${b.calls_in_window} failed`;
  return h('span', { title: b.message || `trips at ${Math.round(b.failure_threshold * 100)} % failures of ≥ ${b.min_calls_in_window} calls in ${b.window_seconds} s` }, badge(b.state, 'breaker'), window);
}

function actions(c, done) {
  const act = (what) => async (e) => {
    e.target.disabled = true;
    const r = await api('POST', `/campaign/${c.id}/${what}`);
    done(r.ok ? '' : detailText(r.status, r.data));
  };
  return h('span', { class: 'row' },
    c.state === 'created' ? h('button', { type: 'button', class: 'small', dataset: { action: 'start' }, onclick: act('start') }, 'Start') : null,
    h('button', { type: 'button', class: 'small secondary', dataset: { action: 'pause' }, disabled: !['running', 'syncing'].includes(c.state), onclick: act('pause') }, 'Pause'),
    h('button', { type: 'button', class: 'small secondary', dataset: { action: 'resume' }, disabled: c.state !== 'paused', onclick: act('resume') }, 'Resume'));
}

const legend = () => h('div', { class: 'legend' }, PARTS.map(([k, l]) => [h('span', { class: `swatch part ${k}` }), l]));

export async function renderCampaigns(ctx) {
  const page = Number(ctx.query.get('page') || 1);
  const r = await api('GET', `/campaign?page=${page}&per_page=25`);
  if (!ctx.current()) return;
  ctx.view.append(h('h1', null, 'Campaigns'));
  if (!r.ok) { ctx.view.append(h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))); return; }
  const items = r.data.items || [];
  const progress = await Promise.all(items.map((c) => api('GET', `/campaign/${c.id}/progress`).then((x) => (x.ok ? x.data : null))));
  if (!ctx.current()) return;
  const reload = (msg) => { if (msg) ctx.showMessage(msg); else window.dispatchEvent(new HashChangeEvent('hashchange')); };
  const rows = items.map((c, k) => {
    const p = progress[k];
    return h('tr', { dataset: { campaign: c.id, state: c.state } },
      h('td', null, h('a', { href: `#/campaigns/${c.id}` }, c.name)),
      h('td', null, badge(c.state, 'state')),
      h('td', null, c.agent_name ?? '—'),
      h('td', { class: 'wide' }, progressBar(p, c), h('span', { class: 'hint' }, p ? `${p.contacts.done} of ${p.contacts.total} done` : `${c.processed_rows} of ${c.total_rows ?? '?'}`)),
      h('td', { class: 'num', dataset: { field: 'retries-due' } }, p ? String(p.retries_due) : '—'),
      h('td', null, breaker(p)),
      h('td', null, actions(c, reload)),
      h('td', { class: 'nowrap' }, p ? h('a', { href: p.workflow.temporal_ui_url, target: '_blank', rel: 'noopener', dataset: { temporal: c.id } }, 'Workflow ↗') : '—'));
  });
  const go = (n) => ctx.setQuery(new URLSearchParams({ page: String(n) }));
  ctx.view.append(section('All campaigns', legend(), items.length
    ? table(['Name', 'State', 'Agent', 'Progress', 'Retries due', 'Circuit breaker', '', 'Temporal'], rows, { id: 'campaigns-table' })
    : h('p', { class: 'empty' }, 'No campaigns yet: create one with POST /api/v1/campaign/create.'), pager(r.data, go)));
}

export async function renderCampaign(ctx, id) {
  const [r, p] = await Promise.all([api('GET', `/campaign/${encodeURIComponent(id)}`), api('GET', `/campaign/${encodeURIComponent(id)}/progress`)]);
  if (!ctx.current()) return;
  ctx.view.append(h('p', null, h('a', { href: '#/campaigns' }, '← Campaigns')));
  if (!r.ok) { ctx.view.append(h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))); return; }
  const c = r.data; const pr = p.ok ? p.data : null;
  const reload = (msg) => { if (msg) ctx.showMessage(msg); else window.dispatchEvent(new HashChangeEvent('hashchange')); };
  ctx.view.append(h('section', { dataset: { campaign: c.id, state: c.state } },
    h('h1', null, c.name, ' ', badge(c.state, 'state')),
    progressBar(pr, c), legend(),
    dl([
      ['Contacts', pr ? PARTS.map(([k, l]) => `${l.toLowerCase()} ${pr.contacts[k]}`).join(' · ') + ` · total ${pr.contacts.total}` : '—'],
      ['Rows', `${c.processed_rows} processed, ${c.failed_rows} failed of ${c.total_rows ?? '?'}`],
      ['Retries due', pr ? `${pr.retries_due} now, ${pr.retries_waiting} later${pr.next_retry_at ? ` (next ${fmtDate(pr.next_retry_at)})` : ''}` : '—'],
      ['In flight', pr && pr.in_flight != null ? String(pr.in_flight) : '—'],
      ['Circuit breaker', breaker(pr)],
      ['Agent', c.agent_name ?? '—'], ['Telephony', c.telephony_configuration_name ?? String(c.telephony_configuration_id)],
      ['Max concurrency', String(c.max_concurrency)],
      ['Created / started / completed', `${fmtDate(c.created_at)} / ${fmtDate(c.started_at)} / ${fmtDate(c.completed_at)}`],
      ['Workflow', pr ? h('a', { href: pr.workflow.temporal_ui_url, target: '_blank', rel: 'noopener', id: 'temporal-link' }, `${pr.workflow.workflow_id} in the Temporal Web UI ↗`) : '—'],
    ], { class: 'grid2', id: 'campaign-summary' }),
    actions(c, reload),
    h('p', null, h('a', { href: `#/calls?campaign_id=${c.id}` }, 'Calls of this campaign'))));
  const logs = Array.isArray(c.logs) ? c.logs.slice(-50).reverse() : [];
  ctx.view.append(section('Log (latest first)', logs.length ? table(['At', 'Level', 'Event', 'Message'], logs.map((e) => h('tr', null,
    h('td', null, fmtDate(e.ts)), h('td', null, h('span', { class: `badge ${e.level === 'error' ? 'bad' : e.level === 'warning' ? 'warn' : 'muted'}` }, e.level)), h('td', { class: 'mono' }, e.event), h('td', null, e.message)))) : h('p', { class: 'empty' }, 'Nothing logged yet.')));
}
