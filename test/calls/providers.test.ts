// A call on a provider that cannot run on this install is refused up front (before a pending row takes a
// concurrency slot): no adapter → 501 naming provider and family; adapter but no credential → 400 naming the
// variable. GET /user/configurations/providers says per provider whether it can run here. The registry
// (core/providers.ts) is the one list both the api and media read.
import test from 'ava';
import { catalog, type Family } from '../../core/catalog.ts';
import { loadConfig } from '../../core/config.ts';
import { ADAPTERS, checkAgentProviders, credentialEnvs, hasAdapter } from '../../core/providers.ts';
import { defaultFactories } from '../../media/services/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { rowsOf } from './helpers.ts';

type Body = Record<string, any>;
const FAMILIES: Family[] = ['llm', 'stt', 'tts'];

// `local` engines run everywhere without credentials; `openai` (LLM) has an adapter and needs OPENAI_API_KEY.
// Every catalog provider has an adapter on this install, so the reachable refusal through the API is the missing
// credential (deepgram STT without DEEPGRAM_API_KEY); the 501 for an id without an adapter is checked on the
// registry itself (a test below), which is what POST /call consults.
const runnable = { llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' } };
const agent = (over: Body = {}) => ({ name: 'Provider probe', ...runnable, ...over });
const gaps = FAMILIES.flatMap((family) => Object.keys(catalog[family]).filter((id) => !hasAdapter(family, id)).map((id) => ({ family, id })));
const NEEDS_DEEPGRAM = "stt provider 'deepgram' needs DEEPGRAM_API_KEY";
const deepgramAgent = () => agent({ stt: { provider: 'deepgram' } });
const NEEDS_OPENAI = "llm provider 'openai' needs OPENAI_API_KEY";

let bare: TestServer; // no vendor credentials at all
let keyed: TestServer; // OPENAI_API_KEY and DEEPGRAM_API_KEY set
test.before(async () => {
  [bare, keyed] = await Promise.all([
    startTestServer({ temporal: false }),
    startTestServer({ temporal: false, env: { DEEPGRAM_API_KEY: 'dg-provider-secret', OPENAI_API_KEY: 'sk-provider-secret' } }),
  ]);
});
test.after.always(async () => {
  await Promise.all([bare?.close(), keyed?.close()]);
});

test('registry: one list of adapters that media builds from; credentials per vendor agree with the catalog', (t) => {
  for (const family of FAMILIES) {
    t.deepEqual([...ADAPTERS[family]].sort(), Object.keys(defaultFactories[family]).sort(), `${family}: registry and media factories`);
    for (const id of ADAPTERS[family]) t.true(id in catalog[family], `${family}/${id} is a catalog provider`);
    for (const [id, entry] of Object.entries(catalog[family])) {
      t.deepEqual(credentialEnvs(id), entry.credentialEnv ? [entry.credentialEnv] : [], `${family}/${id} credential`);
    }
  }
  t.true(hasAdapter('llm', 'openai'));
  t.false(hasAdapter('stt', 'not-a-provider'), 'unknown ids have no adapter');
  t.deepEqual(credentialEnvs('local'), []);

  const ok = checkAgentProviders(loadConfig({ OPENAI_API_KEY: 'sk-x' }), agent({ llm: { provider: 'openai' } }));
  t.deepEqual(ok, { ok: true });
  t.deepEqual(checkAgentProviders(loadConfig({}), agent({ llm: { provider: 'openai' } })), { ok: false, status: 400, reason: 'missing_credentials', detail: NEEDS_OPENAI });
  t.deepEqual(checkAgentProviders(loadConfig({ OPENAI_API_KEY: '' }), agent({ llm: { provider: 'openai' } })), { ok: false, status: 400, reason: 'missing_credentials', detail: NEEDS_OPENAI }, 'an empty value is not a credential');
  t.deepEqual(gaps, [], 'every catalog provider has an adapter on this install');
  // A provider that cannot run at all is reported before a missing credential elsewhere.
  t.deepEqual(
    checkAgentProviders(loadConfig({}), { ...agent({ stt: { provider: 'not-a-provider' } }), llm: { provider: 'openai' } }),
    { ok: false, status: 501, reason: 'provider_not_supported', detail: "stt provider 'not-a-provider' is not implemented on this install" },
  );
  t.deepEqual(checkAgentProviders(loadConfig({}), agent({ tts: { provider: 'not-a-provider' } })), { ok: false, status: 501, reason: 'provider_not_supported', detail: "tts provider 'not-a-provider' is not implemented on this install" });
});

test('POST /call on a provider whose credential is unset: 400 naming the variable, on every transport, before the concurrency gate', async (t) => {
  const { orgId, apiKey } = await bare.createOrg({ concurrency: 1 });
  const cannotRun = deepgramAgent();
  const cc = { provider: 'twilio', phoneNumber: '+14155550100', auth: { accountSid: 'AC1', authToken: 'secret-token' } };
  const bodies = [
    { agent: cannotRun },
    { agent: cannotRun, transport: 'webrtc' },
    { agent: cannotRun, type: 'outbound', toNumber: '+14155550101', callConfig: cc },
    { agent: cannotRun, type: 'inbound', callConfig: cc },
  ];
  for (const body of bodies) {
    const r = await bare.request('POST', '/call', { key: apiKey, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.deepEqual(r.body, { detail: NEEDS_DEEPGRAM });
  }
  let rows = await rowsOf(bare.db, orgId);
  t.is(rows.length, 4);
  for (const r of rows) {
    t.like(r, { status: 'error', connection_status: 'missing_credentials', ended_reason: null });
    t.true(r.tags.includes('rejected'));
  }
  t.deepEqual(rows.map((r) => r.transport), ['websocket', 'webrtc', 'outbound', 'inbound']);
  t.deepEqual(rows[0]!.logs.validation_error, NEEDS_DEEPGRAM);

  // The refusals took no slot: the single slot is still free for a call that can run …
  const ok = await bare.request('POST', '/call', { key: apiKey, body: { agent: agent() } });
  t.is(ok.status, 200);
  // … and with that slot taken, the refusal is still the provider's, not the concurrency gate's.
  const full = await bare.request('POST', '/call', { key: apiKey, body: { agent: cannotRun } });
  t.deepEqual([full.status, full.body], [400, { detail: NEEDS_DEEPGRAM }]);
  rows = await rowsOf(bare.db, orgId);
  t.is(rows.filter((r) => r.status === 'pending').length, 1);
  t.false(rows.some((r) => r.connection_status === 'concurrency_limit_reached'));
});

test('saved agent and test call on a vendor provider: refused while its key is unset, admitted once it is set', async (t) => {
  for (const [server, expected] of [[bare, 400], [keyed, 200]] as const) {
    const { orgId, apiKey } = await server.createOrg();
    const saved = await server.request('POST', '/agents', { key: apiKey, body: deepgramAgent() });
    t.is(saved.status, 201, 'an agent may be saved with any catalog provider');
    const call = await server.request('POST', '/call', { key: apiKey, body: { agentId: saved.body.uuid } });
    t.is(call.status, expected);
    const testCall = await server.request('POST', `/agents/${saved.body.uuid}/test-call`, { key: apiKey });
    t.is(testCall.status, expected);
    const rows = await rowsOf(server.db, orgId);
    t.is(rows.length, 2);
    if (expected === 400) {
      t.deepEqual(call.body, { detail: NEEDS_DEEPGRAM });
      t.true(rows.every((r) => r.connection_status === 'missing_credentials' && r.agent_uuid === saved.body.uuid));
      t.true(rows[1]!.tags.includes('test_call'));
    } else {
      t.true(rows.every((r) => r.status === 'pending'));
    }
  }
});

test('adapter present but credential missing: 400 naming the variable and a missing_credentials row; with the key set the call is admitted', async (t) => {
  const openai = agent({ llm: { provider: 'openai', model: 'gpt-4.1-mini' } });
  const a = await bare.createOrg();
  const refused = await bare.request('POST', '/call', { key: a.apiKey, body: { agent: openai, transport: 'webrtc' } });
  t.deepEqual([refused.status, refused.body], [400, { detail: NEEDS_OPENAI }]);
  const saved = await bare.request('POST', '/agents', { key: a.apiKey, body: openai });
  const testCall = await bare.request('POST', `/agents/${saved.body.uuid}/test-call`, { key: a.apiKey });
  t.deepEqual([testCall.status, testCall.body], [400, { detail: NEEDS_OPENAI }]);
  const rows = await rowsOf(bare.db, a.orgId);
  t.deepEqual(rows.map((r) => [r.status, r.connection_status]), [['error', 'missing_credentials'], ['error', 'missing_credentials']]);

  const b = await keyed.createOrg();
  const admitted = await keyed.request('POST', '/call', { key: b.apiKey, body: { agent: openai } });
  t.is(admitted.status, 200);
  t.is(admitted.body.status, 'pending');
});

test('GET /user/configurations/providers: configured, adapter and available per provider; fields of before kept; no secrets', async (t) => {
  const get = async (s: TestServer) => {
    const { apiKey } = await s.createOrg();
    const r = await s.request('GET', '/user/configurations/providers', { key: apiKey });
    t.is(r.status, 200);
    return (family: string, provider: string) => r.body.providers.find((p: Body) => p.family === family && p.provider === provider);
  };
  const b = await get(bare);
  t.deepEqual(b('llm', 'openai'), { family: 'llm', provider: 'openai', label: 'OpenAI', credentialEnv: 'OPENAI_API_KEY', credentialsConfigured: false, configured: false, adapter: true, available: false });
  t.like(b('stt', 'deepgram'), { configured: false, adapter: true, available: false, credentialEnv: 'DEEPGRAM_API_KEY' });
  for (const family of FAMILIES) t.like(b(family, 'local'), { configured: true, adapter: true, available: true, credentialEnv: null });

  const k = await get(keyed);
  t.like(k('llm', 'openai'), { credentialsConfigured: true, configured: true, adapter: true, available: true });
  t.like(k('stt', 'deepgram'), { configured: true, adapter: true, available: true });
  const r = await keyed.request('GET', '/user/configurations/providers', { key: (await keyed.createOrg()).apiKey });
  t.is(r.body.providers.length, 5 + 6 + 7);
  t.false(JSON.stringify(r.body).includes('provider-secret'));
  t.false(JSON.stringify(r.body).includes('sk-'));
});
