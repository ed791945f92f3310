// Agent tests: an agent's scenarios (GET/POST /agents/{uuid}/tests) with a run button per mode, one test's runs
// with pass/fail (GET …/runs, followed while a run is live), and one run: its verdicts per criterion, the transcript
// as the simulated caller heard it, and the recording of its call (GET /calls/{callId}).
//   #/agents/<uuid>/tests   #/agents/<uuid>/tests/<testId>   #/agents/<uuid>/tests/<testId>/runs/<runId>
import { api, badge, detailText, dl, fmtClock, fmtDate, fmtShort, h, liveBadge, section, table } from './util.js';

const LIVE = new Set(['queued', 'running']);
const POLL_MS = 2000;

const testsPath = (uuid) => `/agents/${encodeURIComponent(uuid)}/tests`;
const testPath = (uuid, id) => `${testsPath(uuid)}/${encodeURIComponent(id)}`;
const engines = (c) => ['llm', 'stt', 'tts'].map((f) => `${f.toUpperCase()} ${c?.[f]?.provider ?? '—'}${c?.[f]?.model ? ` / ${c[f].model}` : ''}`).join(' · ');
const verdictCount = (r) => (r.verdicts.length ? `${r.verdicts.filter((v) => v.passed).length} of ${r.verdicts.length}` : '—');

/** Start a run; the answer (or the API's refusal) goes to `out`, then `after(run)`. */
async function startRun(uuid, testId, mode, out, after) {
  const r = await api('POST', `${testPath(uuid, testId)}/runs`, { mode });
  if (!r.ok) {
    out.replaceChildren(h('p', { class: 'message', dataset: { status: String(r.status) } }, `${r.status}: ${detailText(r.status, r.data)}`));
    return;
  }
  out.replaceChildren(h('p', { class: 'ok-note' }, `Run ${r.data.id} queued (${mode}).`));
  await after(r.data);
}

function runButtons(uuid, testId, out, after) {
  return h('span', { class: 'row' },
    h('button', { type: 'button', class: 'small', dataset: { run: testId, mode: 'audio' }, onclick: () => void startRun(uuid, testId, 'audio', out, after) }, 'Run'),
    h('button', { type: 'button', class: 'small secondary', dataset: { run: testId, mode: 'text' }, title: 'Text mode: no audio, the same session and tools', onclick: () => void startRun(uuid, testId, 'text', out, after) }, 'Run as text'));
}

function header(ctx, agent, uuid, title, back) {
  ctx.view.append(h('p', null, h('a', { href: back.href }, `← ${back.label}`)));
  ctx.view.append(h('section', null, h('h1', null, title), h('p', { class: 'hint' }, 'Agent ', h('a', { href: `#/agents/${uuid}` }, agent.config?.name || uuid))));
}

export async function renderTests(ctx, uuid) {
  const [a, r] = await Promise.all([api('GET', `/agents/${encodeURIComponent(uuid)}`), api('GET', `${testsPath(uuid)}?per_page=100`)]);
  if (!ctx.current()) return;
  if (!a.ok || !r.ok) {
    ctx.view.append(h('p', null, h('a', { href: '#/agents' }, '← Agents')), h('p', { class: 'message', role: 'alert' }, detailText(a.ok ? r.status : a.status, a.ok ? r.data : a.data)));
    return;
  }
  header(ctx, a.data, uuid, 'Tests', { href: `#/agents/${uuid}`, label: a.data.config?.name || 'Agent' });
  const items = r.data.items || [];
  // each test's latest run, for the list
  const latest = await Promise.all(items.map((t) => api('GET', `${testPath(uuid, t.id)}/runs?per_page=1`)));
  if (!ctx.current()) return;
  const out = h('div', { id: 'tests-result', role: 'status' });
  const rows = items.map((t, i) => {
    const last = latest[i].ok ? latest[i].data.items[0] : null;
    return h('tr', { dataset: { test: t.id } },
      h('td', null, h('a', { href: `#/agents/${uuid}/tests/${t.id}` }, t.name)),
      h('td', { class: 'wide' }, t.scenario.length > 140 ? `${t.scenario.slice(0, 140)}…` : t.scenario),
      h('td', { class: 'num' }, String(t.criteria.length)),
      h('td', { class: 'num' }, String(t.maxTurns)),
      h('td', { class: 'small' }, engines(t.caller)),
      h('td', null, last ? [h('a', { href: `#/agents/${uuid}/tests/${t.id}/runs/${last.id}` }, badge(last.status, 'run')), ' ', h('span', { class: 'hint' }, fmtShort(last.createdAt))] : h('span', { class: 'hint' }, 'never run')),
      h('td', null, runButtons(uuid, t.id, out, (run) => { location.hash = `#/agents/${uuid}/tests/${t.id}/runs/${run.id}`; })));
  });
  ctx.view.append(section('Scenarios', out,
    items.length ? table(['Name', 'Scenario', 'Criteria', 'Turns', 'Simulated caller', 'Last run', ''], rows, { id: 'tests-table' })
      : h('p', { class: 'empty' }, 'No tests yet: add one below (or POST /api/v1/agents/{uuid}/tests).')));
  ctx.view.append(newTestForm(ctx, uuid));
}

function newTestForm(ctx, uuid) {
  const out = h('div', { id: 'new-test-result', role: 'status' });
  const form = h('form', { id: 'new-test', class: 'filters' },
    h('div', { class: 'filter-row' },
      h('label', null, 'Name', h('input', { name: 'name', required: true, maxlength: 120 })),
      h('label', null, 'Turns', h('input', { name: 'maxTurns', type: 'number', min: 1, max: 20, value: 6 }))),
    h('label', null, 'Scenario: who the caller is and what they want', h('textarea', { name: 'scenario', rows: 3, maxlength: 4000, required: true })),
    h('label', null, 'Criteria, one per line (1 to 10)', h('textarea', { name: 'criteria', rows: 4, required: true })),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Add test'), h('span', { class: 'hint' }, 'The caller runs on the local engines; other engines through the API.')),
    out);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = new FormData(form);
    const body = {
      name: String(f.get('name') || ''),
      scenario: String(f.get('scenario') || ''),
      criteria: String(f.get('criteria') || '').split('\n').map((c) => c.trim()).filter(Boolean),
      maxTurns: Number(f.get('maxTurns') || 6),
    };
    const r = await api('POST', testsPath(uuid), body);
    if (!ctx.current()) return;
    if (r.ok) location.hash = `#/agents/${uuid}/tests/${r.data.id}`;
    else out.replaceChildren(h('p', { class: 'message', dataset: { status: String(r.status) } }, `${r.status}: ${detailText(r.status, r.data)}`));
  });
  return section('New test', form);
}

export async function renderTest(ctx, uuid, testId) {
  const [a, t] = await Promise.all([api('GET', `/agents/${encodeURIComponent(uuid)}`), api('GET', testPath(uuid, testId))]);
  if (!ctx.current()) return;
  if (!a.ok || !t.ok) {
    ctx.view.append(h('p', null, h('a', { href: `#/agents/${uuid}/tests` }, '← Tests')), h('p', { class: 'message', role: 'alert' }, detailText(a.ok ? t.status : a.status, a.ok ? t.data : a.data)));
    return;
  }
  const test = t.data;
  header(ctx, a.data, uuid, test.name, { href: `#/agents/${uuid}/tests`, label: 'Tests' });
  const out = h('div', { id: 'run-result', role: 'status' });
  const runs = h('div', { id: 'runs' });
  let timer = null;
  const draw = async () => {
    const r = await api('GET', `${testPath(uuid, testId)}/runs?per_page=50`);
    if (!ctx.current()) return;
    if (!r.ok) { runs.replaceChildren(h('p', { class: 'message' }, detailText(r.status, r.data))); return; }
    const items = r.data.items || [];
    runs.replaceChildren(items.length ? table(['Started', 'Mode', 'Status', 'Criteria passed', 'Ended by', 'Call', 'Error'], items.map((x) => h('tr', { dataset: { runRow: x.id, status: x.status } },
      h('td', { class: 'nowrap' }, h('a', { href: `#/agents/${uuid}/tests/${testId}/runs/${x.id}` }, fmtShort(x.startedAt || x.createdAt))),
      h('td', null, x.mode),
      h('td', null, badge(x.status, 'run'), LIVE.has(x.status) ? liveBadge() : null),
      h('td', { class: 'num' }, verdictCount(x)),
      h('td', null, x.endedBy ?? '—'),
      h('td', { class: 'mono small' }, x.callId ? h('a', { href: `#/calls/${x.callId}` }, x.callId.slice(0, 8)) : '—'),
      h('td', { class: 'small' }, x.error ?? ''))), { id: 'runs-table' }) : h('p', { class: 'empty' }, 'No runs yet.'));
    clearTimeout(timer);
    if (items.some((x) => LIVE.has(x.status))) timer = setTimeout(() => void draw(), POLL_MS);
  };
  ctx.onLeave(() => clearTimeout(timer));
  ctx.view.append(section('Scenario',
    h('p', { id: 'scenario' }, test.scenario),
    h('ol', { id: 'criteria' }, test.criteria.map((c) => h('li', null, c))),
    dl([['Turns', String(test.maxTurns)], ['Time limit', `${test.maxDurationS} s`], ['Simulated caller', engines(test.caller)], ['Judge', `${test.judge.provider} / ${test.judge.model}`]]),
    runButtons(uuid, testId, out, () => draw()), out));
  ctx.view.append(section('Runs', runs));
  await draw();
}

export async function renderRun(ctx, uuid, testId, runId) {
  const path = `${testPath(uuid, testId)}/runs/${encodeURIComponent(runId)}`;
  const r = await api('GET', path);
  if (!ctx.current()) return;
  ctx.view.append(h('p', null, h('a', { href: `#/agents/${uuid}/tests/${testId}` }, '← Runs of this test')));
  if (!r.ok) { ctx.view.append(h('p', { class: 'message', role: 'alert' }, detailText(r.status, r.data))); return; }
  const body = h('div', { id: 'run' });
  ctx.view.append(body);
  let timer = null;
  let shownCall = null;
  ctx.onLeave(() => clearTimeout(timer));
  const draw = async (run) => {
    const call = run.callId ? await api('GET', `/calls/${encodeURIComponent(run.callId)}`) : null;
    if (!ctx.current()) return;
    body.replaceChildren(...runView(uuid, testId, run, call && call.ok ? call.data : null));
    shownCall = call && call.ok ? call.data : null;
    const waiting = LIVE.has(run.status) || (shownCall && !shownCall.recordingUrl && shownCall.connectionStatus === 'completed' && Date.now() - Date.parse(run.endedAt || run.createdAt) < 120_000);
    if (waiting) {
      timer = setTimeout(async () => {
        const again = await api('GET', path);
        if (ctx.current() && again.ok) await draw(again.data);
      }, POLL_MS);
    }
  };
  await draw(r.data);
}

function runView(uuid, testId, run, call) {
  const t0 = Date.parse(run.transcript[0]?.at || run.startedAt || run.createdAt);
  const summary = h('section', null,
    h('h1', null, 'Run ', h('span', { class: 'mono' }, run.id.slice(0, 8)), ' ', badge(run.status, 'run'), LIVE.has(run.status) ? liveBadge() : null),
    dl([
      ['Mode', run.mode], ['Criteria passed', verdictCount(run)], ['Ended by', run.endedBy ?? '—'], ['Attempts', String(run.attempts)],
      ['Started', fmtDate(run.startedAt)], ['Ended', fmtDate(run.endedAt)],
      ['Call', run.callId ? h('a', { href: `#/calls/${run.callId}`, id: 'run-call' }, run.callId) : '—'],
    ], { id: 'run-summary', class: 'grid2' }),
    run.error ? h('p', { class: 'message', id: 'run-error' }, run.error) : null);
  const verdicts = section('Verdicts', run.verdicts.length
    ? h('ul', { id: 'verdicts', class: 'transcript' }, run.verdicts.map((v) => h('li', { class: v.passed ? 'assistant' : 'user', dataset: { passed: String(v.passed) } },
      h('span', { class: `badge ${v.passed ? 'ok' : 'bad'}` }, v.passed ? 'pass' : 'fail'), h('strong', null, v.criterion), h('span', { class: 'hint' }, v.reason))))
    : h('p', { class: 'empty' }, LIVE.has(run.status) ? 'The judge scores the transcript when the conversation is over.' : 'No verdicts: the run ended before the judge.'));
  const transcript = section('Transcript (as the simulated caller heard it)', run.transcript.length
    ? h('ol', { id: 'run-transcript', class: 'transcript' }, run.transcript.map((l) => h('li', { class: l.role === 'caller' ? 'user' : 'assistant', dataset: { role: l.role } },
      h('span', { class: 'at mono' }, fmtClock((Date.parse(l.at) - t0) / 1000)), h('span', { class: 'who' }, l.role === 'caller' ? 'Caller' : 'Agent'), h('span', { class: 'text' }, l.text))))
    : h('p', { class: 'empty' }, 'Nothing said yet.'));
  const recording = section('Recording',
    call?.recordingUrl ? h('audio', { id: 'run-recording', controls: true, preload: 'metadata', src: call.recordingUrl })
      : h('p', { class: 'hint', id: 'run-recording-status' }, !run.callId ? 'No call was placed.' : call && ['pending', 'active'].includes(call.status) ? 'The recording is published when the call has ended.' : 'The recording appears after post-call processing.'),
    run.callId ? h('p', { class: 'hint' }, 'The call, with its waveform, latency and usage: ', h('a', { href: `#/calls/${run.callId}` }, 'open the call')) : null);
  return [summary, verdicts, transcript, recording];
}
