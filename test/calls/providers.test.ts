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
// `gap`: a catalog provider without an adapter on this install — deepgram STT in this tree; once vendor adapters
// land, whichever catalog provider is still without one (the 501 tests are skipped only if none is left).
const runnable = { llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' } };
const agent = (over: Body = {}) => ({ name: 'Provider probe', ...runnable, ...over });
const gaps = FAMILIES.flatMap((family) => Object.keys(catalog[family]).filter((id) => !hasAdapter(family, id)).map((id) => ({ family, id })));
const gap = gaps.find((g) => g.family === 'stt' && g.id === 'deepgram') ?? gaps[0];
const NO_ADAPTER = gap ? `${gap.family} provider '${gap.id}' is not implemented on this install` : '';
const gapAgent = () => agent(gap ? { [gap.family]: { provider: gap.id } } : {});
const gapCredentials = gap ? Object.fromEntries(credentialEnvs(gap.id).map((name) => [name, 'gap-provider-secret'])) : {};
const withGap = gap ? test : test.skip;
const NEEDS_OPENAI = "llm provider 'openai' needs OPENAI_API_KEY";

let bare: TestServer; // no vendor credentials at all
let keyed: TestServer; // OPENAI_API_KEY and the gap vendor's key set
test.before(async () => {
  [bare, keyed] = await Promise.all([
    startTestServer({ temporal: false }),
    startTestServer({ temporal: false, env: { ...gapCredentials, OPENAI_API_KEY: 'sk-provider-secret' } }),
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
  // A provider that cannot run at all is reported before a missing credential elsewhere.
  if (gap && gap.family !== 'llm') {
    t.deepEqual(checkAgentProviders(loadConfig({}), { ...gapAgent(), llm: { provider: 'openai' } }), { ok: false, status: 501, reason: 'provider_not_supported', detail: NO_ADAPTER });
  }
  t.deepEqual(checkAgentProviders(loadConfig({}), agent({ tts: { provider: 'not-a-provider' } })), { ok: false, status: 501, reason: 'provider_not_supported', detail: "tts provider 'not-a-provider' is not implemented on this install" });
});

withGap('POST /call on a provider without an adapter: 501 naming provider and family, on every transport, before the concurrency gate', async (t) => {
  const { orgId, apiKey } = await bare.createOrg({ concurrency: 1 });
  const cannotRun = gapAgent();
  const cc = { provider: 'twilio', phoneNumber: '+14155550100', auth: { accountSid: 'AC1', authToken: 'secret-token' } };
  const bodies = [
    { agent: cannotRun },
    { agent: cannotRun, transport: 'webrtc' },
    { agent: cannotRun, type: 'outbound', toNumber: '+14155550101', callConfig: cc },
    { agent: cannotRun, type: 'inbound', callConfig: cc },
  ];
  for (const body of bodies) {
    const r = await bare.request('POST', '/call', { key: apiKey, body });
    t.is(r.status, 501, JSON.stringify(body));
    t.deepEqual(r.body, { detail: NO_ADAPTER });
  }
  let rows = await rowsOf(bare.db, orgId);
  t.is(rows.length, 4);
  for (const r of rows) {
    t.like(r, { status: 'error', connection_status: 'provider_not_supported', ended_reason: null });
    t.true(r.tags.includes('rejected'));
  }
  t.deepEqual(rows.map((r) => r.transport), ['websocket', 'webrtc', 'outbound', 'inbound']);
  t.deepEqual(rows[0]!.logs.validation_error, NO_ADAPTER);

  // The refusals took no slot: the single slot is still free for a call that can run …
  const ok = await bare.request('POST', '/call', { key: apiKey, body: { agent: agent() } });
  t.is(ok.status, 200);
  // … and with that slot taken, the refusal is still the provider's, not the concurrency gate's.
  const full = await bare.request('POST', '/call', { key: apiKey, body: { agent: cannotRun } });
  t.deepEqual([full.status, full.body], [501, { detail: NO_ADAPTER }]);
  rows = await rowsOf(bare.db, orgId);
  t.is(rows.filter((r) => r.status === 'pending').length, 1);
  t.false(rows.some((r) => r.connection_status === 'concurrency_limit_reached'));
});

withGap('saved agent and test call on a provider without an adapter: 501; credentials set do not make it runnable', async (t) => {
  const { orgId, apiKey } = await keyed.createOrg();
  const saved = await keyed.request('POST', '/agents', { key: apiKey, body: gapAgent() });
  t.is(saved.status, 201, 'an agent may be saved with any catalog provider');
  const call = await keyed.request('POST', '/call', { key: apiKey, body: { agentId: saved.body.uuid } });
  t.deepEqual([call.status, call.body], [501, { detail: NO_ADAPTER }]);
  const testCall = await keyed.request('POST', `/agents/${saved.body.uuid}/test-call`, { key: apiKey });
  t.deepEqual([testCall.status, testCall.body], [501, { detail: NO_ADAPTER }]);
  const rows = await rowsOf(keyed.db, orgId);
  t.is(rows.length, 2);
  t.true(rows.every((r) => r.connection_status === 'provider_not_supported' && r.agent_uuid === saved.body.uuid));
  t.true(rows[1]!.tags.includes('test_call'));
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
  if (gap) t.like(b(gap.family, gap.id), { configured: credentialEnvs(gap.id).length === 0, adapter: false, available: false, credentialEnv: credentialEnvs(gap.id)[0] ?? null });
  for (const family of FAMILIES) t.like(b(family, 'local'), { configured: true, adapter: true, available: true, credentialEnv: null });

  const k = await get(keyed);
  t.like(k('llm', 'openai'), { credentialsConfigured: true, configured: true, adapter: true, available: true });
  if (gap) t.like(k(gap.family, gap.id), { configured: true, adapter: false, available: false }, 'credentials alone do not make it runnable');
  const r = await keyed.request('GET', '/user/configurations/providers', { key: (await keyed.createOrg()).apiKey });
  t.is(r.body.providers.length, 5 + 6 + 7);
  t.false(JSON.stringify(r.body).includes('provider-secret'));
  t.false(JSON.stringify(r.body).includes('sk-'));
});
