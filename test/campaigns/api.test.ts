// The campaign API without dialing: every create error string, defaults persisted, list/get envelopes, PATCH rules,
// start/pause/resume as workflow updates on a campaign whose only slot is days away (so nothing dials), the
// search attributes an operator finds it by, the report, and another organization's campaign → 404.
import test from 'ava';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { campaignWorkflowId, progressQuery } from '../../workflows/campaign/messages.ts';
import { campaign, csvOf, phoneList, setupOrg, startEnv, uploadCsv, waitForState, type Env, type Org } from './helpers.ts';
import { until } from '../helpers/wait.ts';

let env: Env;
let org: Org;
let other: Org;
let csvId: string;

test.before(async () => {
  env = await startEnv('campaigns-api-test');
  org = await setupOrg(env, { numbers: 3, concurrency: 5 });
  other = await setupOrg(env, { numbers: 2 });
  csvId = await uploadCsv(env.s, org.apiKey, csvOf(phoneList(5)));
});

test.after.always(async () => {
  await env?.close();
});

const create = (body: Record<string, unknown>, key = org.apiKey) => env.s.request('POST', '/campaign/create', { key, body });
const valid = (over: Record<string, unknown> = {}) => ({ name: 'Spring recall', agent_uuid: org.agentUuid, source_type: 'csv', source_id: csvId, ...over });
/** A slot three days from today (UTC): the campaign waits and never dials during the test. */
const farSlot = () => {
  const day = (DateTime.utc().weekday - 1 + 3) % 7;
  return { timezone: 'UTC', slots: [{ day_of_week: day, start_time: '00:00', end_time: '00:01' }] };
};

test('create: defaults persisted, the spec response fields, state created', async (t) => {
  const r = await create({ ...valid(), unknown_field: 'ignored' });
  t.is(r.status, 200, JSON.stringify(r.body));
  const c = r.body;
  t.deepEqual(Object.keys(c).sort(), [
    'agent_id', 'agent_name', 'circuit_breaker', 'completed_at', 'created_at', 'executed_count', 'failed_rows', 'id', 'logs',
    'max_concurrency', 'name', 'processed_rows', 'retry_config', 'schedule_config', 'source_id', 'source_type', 'started_at', 'state',
    'telephony_configuration_id', 'telephony_configuration_name', 'total_queued_count', 'total_rows',
  ]);
  t.like(c, {
    name: 'Spring recall', state: 'created', agent_name: 'Campaign agent', source_type: 'csv', source_id: csvId,
    telephony_configuration_id: org.configId, telephony_configuration_name: 'Main line', total_rows: null, processed_rows: 0,
    failed_rows: 0, max_concurrency: 1, executed_count: 0, total_queued_count: 0, schedule_config: null, started_at: null, completed_at: null,
  });
  t.is(typeof c.agent_id, 'number');
  t.false('agent_uuid' in c);
  t.deepEqual(c.retry_config, {
    enabled: true, max_retries: 2, retry_delay_seconds: 120, retry_on_busy: true, retry_on_no_answer: true, retry_on_voicemail: true,
    backoff_multiplier: 1, retry_delay_cap_seconds: 3600, busy_delay_seconds: null, no_answer_delay_seconds: null, voicemail_delay_seconds: null,
  });
  t.deepEqual(c.circuit_breaker, { enabled: true, failure_threshold: 0.5, window_seconds: 120, min_calls_in_window: 5 });
  t.is(c.logs.length, 1);
  t.deepEqual(Object.keys(c.logs[0]).sort(), ['details', 'event', 'level', 'message', 'ts']);
  t.like(c.logs[0], { level: 'info', event: 'created' });
  const again = await env.s.request('GET', `/campaign/${c.id}`, { key: org.apiKey });
  t.deepEqual(again.body, c);
});

test('create: echo of given configs, explicit telephony configuration and max_concurrency', async (t) => {
  const retry = { max_retries: 4, retry_delay_seconds: 30, backoff_multiplier: 2, busy_delay_seconds: 15 };
  const r = await create(valid({ telephony_configuration_id: org.configId, max_concurrency: 3, retry_config: retry, schedule_config: farSlot(), circuit_breaker: { failure_threshold: 0.25 } }));
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body.retry_config, { ...retry, retry_on_busy: true, retry_delay_cap_seconds: 3600, no_answer_delay_seconds: null });
  t.deepEqual(r.body.schedule_config, { enabled: true, ...farSlot() });
  t.like(r.body.circuit_breaker, { failure_threshold: 0.25, window_seconds: 120 });
  t.is(r.body.max_concurrency, 3);
});

test('create: every error string', async (t) => {
  // 422 arrays
  const bad = await create({ name: 'x', source_type: 'xlsx', source_id: csvId, schedule_config: { timezone: 'Nowhere/City', slots: [{ day_of_week: 0, start_time: '9:00', end_time: '10:00' }, { day_of_week: 1, start_time: '11:00', end_time: '10:00' }] } });
  t.is(bad.status, 422);
  const locs = bad.body.detail.map((d: { loc: string[]; type: string }) => `${d.loc.join('.')}:${d.type}`).sort();
  t.deepEqual(locs, [
    'body.agent_uuid:missing', 'body.schedule_config.slots.0.start_time:string_pattern_mismatch', 'body.schedule_config.slots.1.end_time:value_error',
    'body.schedule_config.timezone:value_error', 'body.source_type:string_pattern_mismatch',
  ]);
  // 404 agent
  const agent = await create(valid({ agent_uuid: '00000000-0000-4000-8000-000000000000' }));
  t.deepEqual([agent.status, agent.body], [404, { detail: 'Agent not found' }]);
  const otherAgent = await create(valid({ agent_uuid: other.agentUuid }));
  t.deepEqual([otherAgent.status, otherAgent.body], [404, { detail: 'Agent not found' }]);
  // telephony configuration
  const noCfg = await create(valid({ telephony_configuration_id: other.configId }));
  t.deepEqual([noCfg.status, noCfg.body], [400, { detail: 'telephony_configuration_not_found' }]);
  const bare = await env.s.createOrg({});
  const bareAgent = await env.s.request('POST', '/agents', { key: bare.apiKey, body: { name: 'A', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' } } });
  const bareCsv = await uploadCsv(env.s, bare.apiKey, csvOf(phoneList(2)));
  const none = await create({ name: 'n', agent_uuid: bareAgent.body.uuid, source_type: 'csv', source_id: bareCsv }, bare.apiKey);
  t.deepEqual([none.status, none.body], [409, { detail: 'no telephony configuration available for organization' }]);
  // max_concurrency: caller numbers (3) and the organization ceiling (5)
  const numbers = await create(valid({ max_concurrency: 4 }));
  t.is(numbers.status, 400);
  t.is(numbers.body.detail, "max_concurrency (4) cannot exceed 3. You have 3 phone number(s) in telephony configuration 'Main line' to call from; add numbers to dial more calls at once.");
  t.regex(numbers.body.detail, /^max_concurrency \(4\) cannot exceed 3\. You have 3 phone number\(s\)/);
  const many = await setupOrg(env, { numbers: 8, concurrency: 6 });
  const manyCsv = await uploadCsv(env.s, many.apiKey, csvOf(phoneList(2)));
  const ceiling = await create({ name: 'c', agent_uuid: many.agentUuid, source_type: 'csv', source_id: manyCsv, max_concurrency: 7 }, many.apiKey);
  t.deepEqual([ceiling.status, ceiling.body], [400, { detail: 'max_concurrency (7) cannot exceed organization limit (6)' }]);
  const range = await create(valid({ max_concurrency: 101 }));
  t.is(range.status, 422);
  // source validation (400 messages naming the problem) — nothing saved
  const before = await countCampaigns(org.orgId);
  const missing = await create(valid({ source_id: '00000000-0000-4000-8000-000000000001' }));
  t.deepEqual([missing.status, missing.body], [400, { detail: "source_id '00000000-0000-4000-8000-000000000001' was not found: upload the CSV with POST /files and pass the returned id" }]);
  const otherFile = await create(valid({ source_id: await uploadCsv(env.s, other.apiKey, csvOf(phoneList(1))) }));
  t.is(otherFile.status, 400);
  const noPhone = await create(valid({ source_id: await uploadCsv(env.s, org.apiKey, 'name,phone\nAda,+14155550101\n') }));
  t.deepEqual([noPhone.status, noPhone.body], [400, { detail: "CSV must have a 'phone_number' column (found: 'name', 'phone')" }]);
  const badRow = await create(valid({ source_id: await uploadCsv(env.s, org.apiKey, 'phone_number,name\n+14155550101,Ada\n12345,Bo\n') }));
  t.deepEqual([badRow.status, badRow.body], [400, { detail: "Row 2, column 'phone_number': '12345' is not a valid phone number (use E.164, e.g. +14155550123)" }]);
  const ragged = await create(valid({ source_id: await uploadCsv(env.s, org.apiKey, 'phone_number,name\n+14155550101,Ada,extra\n') }));
  t.is(ragged.status, 400);
  t.regex(ragged.body.detail, /^CSV is not well formed \(line 2\)/);
  const key = await create(valid({ source_id: `documents/${org.orgId}/00000000-0000-4000-8000-000000000002/c.csv` }));
  t.is(key.status, 400);
  t.regex(key.body.detail, /was not found in storage/);
  t.is(await countCampaigns(org.orgId), before, 'nothing saved by a refused create');
});

async function countCampaigns(orgId: string) {
  return env.s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM campaigns WHERE organization_id = ${orgId}`);
}

test('list is paginated; another organization sees none of it (404 on every route)', async (t) => {
  const o = await setupOrg(env, { numbers: 1 });
  const src = await uploadCsv(env.s, o.apiKey, csvOf(phoneList(2)));
  const ids: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await env.s.request('POST', '/campaign/create', { key: o.apiKey, body: { name: `c${i}`, agent_uuid: o.agentUuid, source_type: 'csv', source_id: src } });
    ids.push(r.body.id);
  }
  const page = await env.s.request('GET', '/campaign?page=2&per_page=2', { key: o.apiKey });
  t.is(page.status, 200);
  t.like(page.body, { total: 3, page: 2, perPage: 2, totalPages: 2 });
  t.deepEqual(page.body.items.map((c: { id: number }) => c.id), [ids[0]]);
  t.is((await env.s.request('GET', '/campaign?per_page=101', { key: o.apiKey })).status, 422);
  const id = ids[0]!;
  for (const [method, path, body] of [
    ['GET', `/campaign/${id}`], ['PATCH', `/campaign/${id}`, { name: 'x' }], ['POST', `/campaign/${id}/start`], ['POST', `/campaign/${id}/pause`],
    ['POST', `/campaign/${id}/resume`], ['GET', `/campaign/${id}/calls`], ['GET', `/campaign/${id}/report`], ['GET', '/campaign/99999999999'],
    ['GET', '/campaign/abc'],
  ] as Array<[string, string, unknown?]>) {
    const r = await env.s.request(method, path, { key: other.apiKey, body });
    t.deepEqual([r.status, r.body], [404, { detail: 'Campaign not found' }], `${method} ${path}`);
  }
  const list = await env.s.request('GET', '/campaign', { key: other.apiKey });
  t.false(list.body.items.some((c: { id: number }) => ids.includes(c.id)));
});

test('GET /campaign/{id}/calls: impossible dates → 422 arrays, never a 500', async (t) => {
  const r = await create(valid({ name: 'dates' }));
  t.is(r.status, 200);
  for (const q of ['from_date=2025-02-30', 'from_date=0000-01-01', 'to_date=2025-13-01', 'to_date=2025-01-01T25:00:00Z']) {
    const x = await env.s.request('GET', `/campaign/${r.body.id}/calls?${q}`, { key: org.apiKey });
    t.is(x.status, 422, q);
    t.deepEqual(x.body.detail.map((d: { loc: string[] }) => d.loc), [['query', q.split('=')[0]]], q);
  }
  t.is((await env.s.request('GET', `/campaign/${r.body.id}/calls?from_date=2024-02-29`, { key: org.apiKey })).status, 200);
});

test('PATCH: fields, validation, concurrency limits; transitions of a created campaign are refused naming the state', async (t) => {
  const c = (await create(valid())).body;
  const r = await env.s.request('PATCH', `/campaign/${c.id}`, { key: org.apiKey, body: { name: 'Renamed', max_concurrency: 2, retry_config: { max_retries: 5 }, circuit_breaker: { window_seconds: 60 }, schedule_config: farSlot(), agent_uuid: 'ignored' } });
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body, { name: 'Renamed', max_concurrency: 2, state: 'created' });
  t.is(r.body.retry_config.max_retries, 5);
  t.is(r.body.circuit_breaker.window_seconds, 60);
  t.deepEqual(r.body.schedule_config.slots, farSlot().slots);
  const tooMany = await env.s.request('PATCH', `/campaign/${c.id}`, { key: org.apiKey, body: { max_concurrency: 4 } });
  t.is(tooMany.status, 400);
  t.regex(tooMany.body.detail, /^max_concurrency \(4\) cannot exceed 3\. You have 3 phone number\(s\)/);
  const bad = await env.s.request('PATCH', `/campaign/${c.id}`, { key: org.apiKey, body: { retry_config: { backoff_multiplier: 0.5 } } });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail[0].loc, ['body', 'retry_config', 'backoff_multiplier']);
  t.is((await campaign(env.s, org.apiKey, c.id)).max_concurrency, 2, 'a refused PATCH changes nothing');
  for (const action of ['pause', 'resume']) {
    const x = await env.s.request('POST', `/campaign/${c.id}/${action}`, { key: org.apiKey });
    t.deepEqual([x.status, x.body], [400, { detail: `Cannot ${action} a campaign in state 'created'` }]);
  }
  // A failed campaign is terminal like a completed one.
  await env.s.db.query(sql.unsafe`UPDATE campaigns SET state = 'failed' WHERE id = ${c.id}`);
  const edit = await env.s.request('PATCH', `/campaign/${c.id}`, { key: org.apiKey, body: { name: 'again' } });
  t.deepEqual([edit.status, edit.body], [400, { detail: 'Cannot update a completed campaign' }]);
});

test('start → running (import, slot wait logged), pause/resume/edit as workflow updates, search attributes, report', async (t) => {
  const c = (await create(valid({ max_concurrency: 2, schedule_config: farSlot() }))).body;
  const started = await env.s.request('POST', `/campaign/${c.id}/start`, { key: org.apiKey });
  t.is(started.status, 200, JSON.stringify(started.body));
  t.not(started.body.state, 'created');
  t.truthy(started.body.started_at);
  const running = await waitForState(env.s, org.apiKey, c.id, 'running');
  t.like(running, { total_rows: 5, processed_rows: 5, failed_rows: 0, total_queued_count: 5, executed_count: 0 });
  const events = () => campaign(env.s, org.apiKey, c.id).then((x) => x.logs.map((l: { event: string }) => l.event));
  await until(async () => (await events()).includes('slot_wait'), { what: 'slot wait log', timeoutMs: 90_000, everyMs: 100 });
  t.deepEqual((await events()).slice(0, 4), ['created', 'state_changed', 'contacts_imported', 'state_changed']);
  const again = await env.s.request('POST', `/campaign/${c.id}/start`, { key: org.apiKey });
  t.deepEqual([again.status, again.body], [400, { detail: "Cannot start a campaign in state 'running'" }]);

  const handle = env.s.temporal!.client.workflow.getHandle(campaignWorkflowId(c.id));
  const paused = await env.s.request('POST', `/campaign/${c.id}/pause`, { key: org.apiKey });
  t.is(paused.status, 200);
  t.is(paused.body.state, 'paused');
  t.is(paused.body.logs.at(-1).event, 'paused');
  const twice = await env.s.request('POST', `/campaign/${c.id}/pause`, { key: org.apiKey });
  t.deepEqual([twice.status, twice.body], [400, { detail: "Cannot pause a campaign in state 'paused'" }]);
  const resumed = await env.s.request('POST', `/campaign/${c.id}/resume`, { key: org.apiKey });
  t.deepEqual([resumed.status, resumed.body.state], [200, 'running']);
  const resumeAgain = await env.s.request('POST', `/campaign/${c.id}/resume`, { key: org.apiKey });
  t.deepEqual([resumeAgain.status, resumeAgain.body], [400, { detail: "Cannot resume a campaign in state 'running'" }]);

  // An edit reaches the running workflow without a restart.
  const edited = await env.s.request('PATCH', `/campaign/${c.id}`, { key: org.apiKey, body: { max_concurrency: 3, retry_config: { max_retries: 7 } } });
  t.is(edited.status, 200);
  const progress = await handle.query(progressQuery);
  t.is(progress.settings.maxConcurrency, 3);
  t.is(progress.settings.retry.max_retries, 7);
  t.is(progress.state, 'running');
  t.is(progress.runs, 1);
  t.is(progress.waitingFor, 'schedule slot');
  t.is((await campaign(env.s, org.apiKey, c.id)).logs.at(-1).event, 'settings_updated');

  // What an operator sees in the Temporal UI: the search attributes and the progress line.
  const desc = await handle.describe();
  t.is(desc.typedSearchAttributes.get({ name: 'CampaignId', type: 'KEYWORD' } as never), String(c.id));
  t.is(desc.typedSearchAttributes.get({ name: 'OrganizationId', type: 'KEYWORD' } as never), org.orgId);
  t.is(desc.typedSearchAttributes.get({ name: 'CampaignState', type: 'KEYWORD' } as never), 'running');
  const listed = await until(async () => {
    for await (const w of env.s.temporal!.client.workflow.list({ query: `CampaignId = '${c.id}' AND CampaignState = 'running'` })) return w;
    return null;
  }, { what: 'visibility', timeoutMs: 90_000, everyMs: 100 });
  t.is(listed.workflowId, `campaign-${c.id}`);

  const report = await fetch(`${env.s.baseUrl}/campaign/${c.id}/report`, { headers: { 'x-api-key': org.apiKey } });
  t.is(report.status, 200);
  t.regex(report.headers.get('content-type') ?? '', /^text\/csv/);
  const lines = (await report.text()).trim().split('\r\n');
  t.is(lines[0], 'row_number,phone_number,contact_status,attempts,last_status,ended_reason,duration_seconds,last_call_id,next_attempt_at,voicemail_left,analysis_status,success,success_score,success_reason');
  t.is(lines.length, 6);
  t.is(lines[1], `1,${phoneList(5)[0]},queued,0,,,,,,,,,,`);
  const calls = await env.s.request('GET', `/campaign/${c.id}/calls`, { key: org.apiKey });
  t.like(calls.body, { items: [], total: 0, page: 1, perPage: 50, totalPages: 0 });

  await handle.terminate('test over');
});

test('a CSV deleted between create and start: the import fails and the campaign ends failed, with the log entry', async (t) => {
  const src = await uploadCsv(env.s, org.apiKey, csvOf(phoneList(2, '+1657')));
  const c = (await create(valid({ source_id: src }))).body;
  t.is((await env.s.request('DELETE', `/files/${src}`, { key: org.apiKey })).status, 200);
  t.is((await env.s.request('POST', `/campaign/${c.id}/start`, { key: org.apiKey })).status, 200);
  const failed = await waitForState(env.s, org.apiKey, c.id, 'failed');
  t.truthy(failed.completed_at);
  const entry = failed.logs.find((l: { event: string }) => l.event === 'import_failed');
  t.like(entry, { level: 'error' });
  t.regex(entry.message, /^Contact import failed: the contact CSV is no longer in storage/);
  const edit = await env.s.request('PATCH', `/campaign/${c.id}`, { key: org.apiKey, body: { name: 'x' } });
  t.deepEqual([edit.status, edit.body], [400, { detail: 'Cannot update a completed campaign' }]);
  const resume = await env.s.request('POST', `/campaign/${c.id}/resume`, { key: org.apiKey });
  t.deepEqual([resume.status, resume.body], [400, { detail: "Cannot resume a campaign in state 'failed'" }]);
});

test('the campaign endpoints are in the OpenAPI document', async (t) => {
  const doc = (await (await fetch(`${env.s.baseUrl}/openapi.json`)).json()) as { paths: Record<string, any> };
  for (const p of ['/campaign/create', '/campaign', '/campaign/{id}', '/campaign/{id}/start', '/campaign/{id}/pause', '/campaign/{id}/resume', '/campaign/{id}/calls', '/campaign/{id}/report']) {
    t.truthy(doc.paths[p], p);
  }
  const create = doc.paths['/campaign/create'].post.requestBody.content['application/json'].schema;
  t.deepEqual([...create.required].sort(), ['agent_uuid', 'name', 'source_id', 'source_type']);
  t.is(create.properties.retry_config.anyOf[0].properties.max_retries.default, 2);
});

test('create and start refuse an agent whose engine has no credentials on this install (400 naming the variable, as POST /call); nothing is created or started', async (t) => {
  const agentBody = (stt: string) => ({ name: `Creds agent ${stt}`, systemPrompt: 'Hi', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: stt }, tts: { provider: 'elevenlabs' } });
  const keyless = await env.s.request('POST', '/agents', { key: org.apiKey, body: agentBody('assemblyai') });
  t.true(keyless.status === 200 || keyless.status === 201, JSON.stringify(keyless.body));
  const r = await create(valid({ agent_uuid: keyless.body.uuid }));
  t.deepEqual([r.status, r.body], [400, { detail: "stt provider 'assemblyai' needs ASSEMBLYAI_API_KEY" }]);
  const made = await env.s.db.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM campaigns c JOIN agents a ON a.id = c.agent_id WHERE a.uuid = ${keyless.body.uuid as string}`);
  t.is(made, 0, 'no campaign created');

  // created with a runnable agent, which is then changed to one that cannot run: start is refused, the state stays
  const ok = await env.s.request('POST', '/agents', { key: org.apiKey, body: agentBody('deepgram') });
  const c = await create(valid({ agent_uuid: ok.body.uuid, schedule_config: farSlot() }));
  t.is(c.status, 200, JSON.stringify(c.body));
  const patched = await env.s.request('PATCH', `/agents/${ok.body.uuid}`, { key: org.apiKey, body: { stt: { provider: 'assemblyai' } } });
  t.is(patched.status, 200, JSON.stringify(patched.body));
  const start = await env.s.request('POST', `/campaign/${c.body.id}/start`, { key: org.apiKey });
  t.deepEqual([start.status, start.body], [400, { detail: "stt provider 'assemblyai' needs ASSEMBLYAI_API_KEY" }]);
  t.is((await campaign(env.s, org.apiKey, c.body.id)).state, 'created');
});

test('an agent whose transfer the campaign\'s carrier cannot make: create and start refuse it (400 naming Twilio and the destination); PATCH of its agent and PUT of its saved transfer tool too', async (t) => {
  const o = await setupOrg(env, { numbers: 1 });
  const src = await uploadCsv(env.s, o.apiKey, csvOf(phoneList(2)));
  const key = o.apiKey;
  const mkAgent = async (tools: unknown[]) => {
    const r = await env.s.request('POST', '/agents', { key, body: { name: 'Desk agent', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' }, tools } });
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
    return r.body.uuid as string;
  };
  const ext = await mkAgent([{ type: 'transferCall', name: 'to_desk', config: { destination: 'PJSIP/123' } }]);
  const refused = await env.s.request('POST', '/campaign/create', { key, body: { name: 'x', agent_uuid: ext, source_type: 'csv', source_id: src } });
  t.is(refused.status, 400);
  t.is(refused.body.detail, "The campaign's agent cannot place Twilio calls: tools.0.config.destination: Twilio cannot reach the SIP endpoint 'PJSIP/123': it has no host. Write it with the SIP server that serves it, e.g. sip:123@pbx.example.com (or SIP/123@<host>)");
  t.is((await env.s.request('GET', '/campaign', { key })).body.total, 0, 'nothing created');

  // a saved transfer tool the campaign's agent references
  const tool = await env.s.request('POST', '/tools', { key, body: { name: 'Desk', definition: { type: 'transferCall', config: { destination: '+15550001111' } } } });
  t.is(tool.status, 200);
  const agentUuid = await mkAgent([tool.body.tool_uuid]);
  const c = await env.s.request('POST', '/campaign/create', { key, body: { name: 'Desk calls', agent_uuid: agentUuid, source_type: 'csv', source_id: src, schedule_config: farSlot() } });
  t.is(c.status, 200, JSON.stringify(c.body));
  const put = await env.s.request('PUT', `/tools/${tool.body.tool_uuid}`, { key, body: { definition: { type: 'transferCall', config: { destination: 'SIP/123' } } } });
  t.is(put.status, 400);
  t.true(put.body.detail.startsWith("Saved tool 'Desk' cannot take the destination 'SIP/123': Twilio cannot reach the SIP endpoint 'SIP/123'"), put.body.detail);
  t.true(put.body.detail.includes(`(agent 'Desk agent' (${agentUuid}) dials for campaign ${c.body.id} 'Desk calls' (created))`), put.body.detail);
  t.is((await env.s.request('GET', `/tools/${tool.body.tool_uuid}`, { key })).body.definition.config.destination, '+15550001111');
  t.is((await env.s.request('PUT', `/tools/${tool.body.tool_uuid}`, { key, body: { definition: { type: 'transferCall', config: { destination: 'sip:desk@pbx.example.com' } } } })).status, 200, 'a SIP URI Twilio can dial');
  const patched = await env.s.request('PATCH', `/agents/${agentUuid}`, { key, body: { tools: [tool.body.tool_uuid, { type: 'transferCall', name: 'to_ext', config: { destination: 'PJSIP/77' } }] } });
  t.is(patched.status, 400);
  t.deepEqual(patched.body.detail.details.map((d: { loc: unknown[] }) => d.loc), [['tools', 1, 'config', 'destination']]);
  t.regex(patched.body.detail.details[0].msg, /Twilio cannot reach the SIP endpoint 'PJSIP\/77'.*dials for campaign/);

  // start checks again (an agent changed by other means since create)
  await env.s.db.query(sql.unsafe`UPDATE agents SET config = jsonb_set(config, '{tools}', ${sql.jsonb([{ type: 'transferCall', name: 'to_ext', description: '', config: { destination: 'PJSIP/9', customMessage: null, timeout: 30, recordTransfer: true } }] as never)}) WHERE uuid = ${agentUuid}`);
  const start = await env.s.request('POST', `/campaign/${c.body.id}/start`, { key });
  t.is(start.status, 400);
  t.regex(start.body.detail, /^The campaign's agent cannot place Twilio calls: tools\.0\.config\.destination: Twilio cannot reach the SIP endpoint 'PJSIP\/9'/);
  t.is((await env.s.request('GET', `/campaign/${c.body.id}`, { key })).body.state, 'created');
});
