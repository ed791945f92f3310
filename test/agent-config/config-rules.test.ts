// Table-driven: every AgentConfig rule with one valid case and at least one invalid case, through POST /agents.
// Invalid cases assert status 400, the {error: 'invalid_agent_config', details: [{loc, msg, type}]} shape and the
// exact loc (and type where it is part of the rule).
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
let key: string;
let otherKey: string;
let orgId: string;
let savedTool: string;
let archivedTool: string;
let otherOrgTool: string;
let savedEndCallTool: string;
let documentId: string;
let blankTool: string;

type Body = Record<string, any>;
const base = (): Body => ({ name: 'Rules', llm: { provider: 'openai', model: null }, stt: { provider: 'soniox' }, tts: { provider: 'elevenlabs' } });
const fn = (over: Body = {}, config: Body = {}): Body => ({ type: 'function', name: 'lookup', config: { server: { url: 'https://api.example.com/x' }, ...config }, ...over });

test.before(async () => {
  s = await startTestServer({ temporal: false, env: { OUTBOUND_BLOCK_HOSTS: 'metadata.google.internal,blocked.example.com' } });
  const a = await s.createOrg({ ratePerMinute: 1_000_000 });
  key = a.apiKey;
  orgId = a.orgId;
  const b = await s.createOrg({ ratePerMinute: 1_000_000 });
  otherKey = b.apiKey;
  const mk = async (k: string, body: Body) => {
    const r = await s.request('POST', '/tools', { key: k, body });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    return r.body.tool_uuid as string;
  };
  savedTool = await mk(key, { name: 'Weather Lookup', definition: { type: 'function', config: { method: 'GET', url: 'https://api.example.com/w' } } });
  archivedTool = await mk(key, { name: 'Old', definition: { type: 'function', config: { method: 'GET', url: 'https://api.example.com/o' } } });
  await s.request('DELETE', `/tools/${archivedTool}`, { key });
  otherOrgTool = await mk(otherKey, { name: 'Theirs', definition: { type: 'function', config: { method: 'GET', url: 'https://api.example.com/t' } } });
  savedEndCallTool = await mk(key, { name: 'Hang up', category: 'endCall', definition: { type: 'endCall', config: { messageType: 'custom', customMessage: 'Bye now' } } });
  blankTool = await mk(key, { name: 'Blank transfer', definition: { type: 'transferCall', config: { destination: '' } } });
  documentId = await s.db.oneFirst(sql.unsafe`
    INSERT INTO documents (organization_id, name, original_name, storage_key, status)
    VALUES (${orgId}, 'faq.txt', 'faq.txt', 'documents/faq.txt', 'completed') RETURNING id::text`) as string;
});
test.after.always(async () => {
  await s?.close();
});

type Expect = { ok: true; check?: (config: Body) => void | boolean } | { loc: (string | number)[]; type?: string; msg?: RegExp };
interface Case { rule: string; body: () => Body; expect: Expect }

const set = (path: string, value: unknown) => () => {
  const b = base();
  const keys = path.split('.');
  let cur: Body = b;
  for (const k of keys.slice(0, -1)) cur = cur[k] ??= {};
  cur[keys[keys.length - 1]!] = value;
  return b;
};
const with_ = (extra: Body) => () => ({ ...base(), ...extra });
const tools = (...t: unknown[]) => () => ({ ...base(), tools: t });
const ok = (check?: (c: Body) => boolean): Expect => ({ ok: true, check });
const bad = (loc: (string | number)[], type?: string, msg?: RegExp): Expect => ({ loc, type, msg });

const cases: Case[] = [
  // required fields
  { rule: 'name required', body: () => { const b = base(); delete b.name; return b; }, expect: bad(['name'], 'missing') },
  { rule: 'name 120 chars ok', body: set('name', 'n'.repeat(120)), expect: ok() },
  { rule: 'name > 120', body: set('name', 'n'.repeat(121)), expect: bad(['name'], 'string_too_long') },
  { rule: 'name blank', body: set('name', '   '), expect: bad(['name']) },
  { rule: 'name empty', body: set('name', ''), expect: bad(['name'], 'string_too_short') },
  { rule: 'llm required', body: () => { const b = base(); delete b.llm; return b; }, expect: bad(['llm'], 'missing') },
  { rule: 'llm.model required', body: set('llm', { provider: 'openai' }), expect: bad(['llm', 'model'], 'missing') },
  { rule: 'llm.model null → provider default', body: set('llm', { provider: 'anthropic', model: null }), expect: ok((c) => c.llm.model === 'claude-haiku-4-5') },
  { rule: 'llm.model in catalog', body: set('llm', { provider: 'groq', model: 'llama-3.1-8b-instant' }), expect: ok((c) => c.llm.model === 'llama-3.1-8b-instant') },
  { rule: 'llm.model off-catalog', body: set('llm', { provider: 'openai', model: 'gpt-9-ultra' }), expect: bad(['llm', 'model'], 'value_error', /gpt-9-ultra.*openai/) },
  { rule: 'llm.provider enum', body: set('llm', { provider: 'azure', model: null }), expect: bad(['llm', 'provider'], 'literal_error') },
  { rule: 'llm local-demo', body: set('llm', { provider: 'local', model: 'local-demo' }), expect: ok() },
  { rule: 'llm local wildcard refused', body: set('llm', { provider: 'local', model: 'llama3' }), expect: bad(['llm', 'model'], 'value_error', /llama3.*local/) },
  { rule: 'stt required', body: () => { const b = base(); delete b.stt; return b; }, expect: bad(['stt'], 'missing') },
  { rule: 'stt.provider required', body: set('stt', {}), expect: bad(['stt', 'provider'], 'missing') },
  { rule: 'tts required', body: () => { const b = base(); delete b.tts; return b; }, expect: bad(['tts'], 'missing') },
  { rule: 'tts.provider enum', body: set('tts', { provider: 'polly' }), expect: bad(['tts', 'provider'], 'literal_error') },
  // strictness
  { rule: 'unknown top-level key', body: with_({ temprature: 1 }), expect: bad(['temprature'], 'extra_forbidden') },
  { rule: 'unknown nested key', body: set('greeting', { speakFirst: 'agent', delay: 1 }), expect: bad(['greeting', 'delay'], 'extra_forbidden') },
  { rule: 'unknown key in tuning block', body: set('stt', { provider: 'deepgram', deepgram: { eot: 1 } }), expect: bad(['stt', 'deepgram', 'eot'], 'extra_forbidden') },
  // languages
  { rule: 'languages default en', body: base, expect: ok((c) => JSON.stringify(c.languages) === '["en"]') },
  { rule: 'languages dedupe keeps first', body: with_({ languages: ['hi', 'en', 'hi', 'en'] }), expect: ok((c) => JSON.stringify(c.languages) === '["hi","en"]') },
  { rule: 'languages unknown id', body: with_({ languages: ['en', 'xx'] }), expect: bad(['languages', 1], 'literal_error') },
  { rule: 'languages empty', body: with_({ languages: [] }), expect: bad(['languages'], 'too_short') },
  { rule: 'languages unsupported by STT model', body: () => ({ ...base(), stt: { provider: 'deepgram' }, languages: ['en', 'hi'] }), expect: bad(['languages'], 'value_error', /hi.*flux-general-en/) },
  { rule: 'languages supported by multi STT model', body: () => ({ ...base(), stt: { provider: 'deepgram', model: 'flux-general-multi' }, languages: ['en', 'hi'] }), expect: ok() },
  { rule: 'languages unsupported by TTS model', body: () => ({ ...base(), stt: { provider: 'sarvam' }, tts: { provider: 'sarvam' }, languages: ['hi', 'ur'] }), expect: bad(['languages'], 'value_error', /ur.*bulbul/) },
  { rule: 'languages unsupported by both names each', body: with_({ languages: ['en', 'or', 'ne'] }), expect: bad(['languages'], 'value_error', /or, ne/) },
  { rule: 'assemblyai ≤ 10 languages ok', body: () => ({ ...base(), stt: { provider: 'assemblyai', model: 'universal-3-5-pro' }, tts: { provider: 'elevenlabs', model: 'eleven_v3' }, languages: ['en', 'es', 'de', 'fr', 'pt', 'hi', 'ar', 'ja', 'ur', 'zh'] }), expect: ok() },
  { rule: 'assemblyai > 10 languages', body: () => ({ ...base(), stt: { provider: 'assemblyai', model: 'universal-3-5-pro' }, tts: { provider: 'elevenlabs', model: 'eleven_v3' }, languages: ['en', 'es', 'de', 'fr', 'pt', 'hi', 'ar', 'ja', 'ur', 'zh', 'ru'] }), expect: bad(['languages'], 'too_long') },
  // timezone, durations, idle
  { rule: 'timezone IANA ok', body: with_({ timezone: 'America/New_York' }), expect: ok() },
  { rule: 'timezone invalid', body: with_({ timezone: 'Mars/Olympus_Mons' }), expect: bad(['timezone'], 'value_error') },
  { rule: 'maxCallDurationS 7200', body: with_({ maxCallDurationS: 7200 }), expect: ok() },
  { rule: 'maxCallDurationS 10', body: with_({ maxCallDurationS: 10 }), expect: ok() },
  { rule: 'maxCallDurationS < 10', body: with_({ maxCallDurationS: 0 }), expect: bad(['maxCallDurationS'], 'greater_than_equal') },
  { rule: 'maxCallDurationS > 7200', body: with_({ maxCallDurationS: 7210 }), expect: bad(['maxCallDurationS'], 'less_than_equal') },
  { rule: 'maxCallDurationS multiple of 10', body: with_({ maxCallDurationS: 615 }), expect: bad(['maxCallDurationS'], 'multiple_of') },
  { rule: 'maxCallDurationS int', body: with_({ maxCallDurationS: 'long' }), expect: bad(['maxCallDurationS'], 'int_type') },
  { rule: 'userIdleTimeoutS 3..25 ok', body: with_({ userIdleTimeoutS: 25 }), expect: ok() },
  { rule: 'userIdleTimeoutS < 3', body: with_({ userIdleTimeoutS: 2 }), expect: bad(['userIdleTimeoutS'], 'greater_than_equal') },
  { rule: 'userIdleTimeoutS > 25', body: with_({ userIdleTimeoutS: 26 }), expect: bad(['userIdleTimeoutS'], 'less_than_equal') },
  { rule: 'userIdleMaxRetries 1..5', body: with_({ userIdleMaxRetries: 5 }), expect: ok() },
  { rule: 'userIdleMaxRetries 0', body: with_({ userIdleMaxRetries: 0 }), expect: bad(['userIdleMaxRetries'], 'greater_than_equal') },
  { rule: 'userIdleMaxRetries 6', body: with_({ userIdleMaxRetries: 6 }), expect: bad(['userIdleMaxRetries'], 'less_than_equal') },
  { rule: 'userIdleMessages blanks dropped', body: with_({ userIdleMessages: ['', ' ', 'Hello?'] }), expect: ok((c) => JSON.stringify(c.userIdleMessages) === '["Hello?"]') },
  { rule: 'userIdleMessages empty → default', body: with_({ userIdleMessages: [] }), expect: ok((c) => JSON.stringify(c.userIdleMessages) === '["Are you still there?"]') },
  { rule: 'userIdleMessages max 5', body: with_({ userIdleMessages: ['a', 'b', 'c', 'd', 'e', 'f'] }), expect: bad(['userIdleMessages'], 'too_long') },
  // greeting
  { rule: 'greeting defaults', body: base, expect: ok((c) => c.greeting.speakFirst === 'agent' && c.greeting.userTimeoutS === 3 && c.greeting.agentDelayS === 0 && c.greeting.interruptible === false) },
  { rule: 'greeting.firstMessages max 5', body: set('greeting.firstMessages', ['1', '2', '3', '4', '5', '6']), expect: bad(['greeting', 'firstMessages'], 'too_long') },
  { rule: 'greeting.firstMessages blanks dropped', body: set('greeting.firstMessages', ['Hi!', '']), expect: ok((c) => c.greeting.firstMessages.length === 1) },
  { rule: 'greeting.agentDelayS 4 ok', body: set('greeting.agentDelayS', 4), expect: ok() },
  { rule: 'greeting.agentDelayS > 4', body: set('greeting.agentDelayS', 4.5), expect: bad(['greeting', 'agentDelayS'], 'less_than_equal') },
  { rule: 'greeting.userTimeoutS < 1', body: set('greeting.userTimeoutS', 0.5), expect: bad(['greeting', 'userTimeoutS'], 'greater_than_equal') },
  { rule: 'greeting.userTimeoutS > 5', body: set('greeting.userTimeoutS', 5.5), expect: bad(['greeting', 'userTimeoutS'], 'less_than_equal') },
  { rule: 'greeting.speakFirst enum', body: set('greeting.speakFirst', 'bot'), expect: bad(['greeting', 'speakFirst'], 'literal_error') },
  // llm knobs
  { rule: 'temperature 2 ok', body: set('llm.temperature', 2), expect: ok() },
  { rule: 'temperature > 2', body: set('llm.temperature', 2.1), expect: bad(['llm', 'temperature'], 'less_than_equal') },
  { rule: 'temperature < 0', body: set('llm.temperature', -0.1), expect: bad(['llm', 'temperature'], 'greater_than_equal') },
  { rule: 'anthropic temperature clamped to 1', body: set('llm', { provider: 'anthropic', model: 'claude-sonnet-4-5', temperature: 1.7 }), expect: ok((c) => c.llm.temperature === 1) },
  { rule: 'anthropic temperature 0.4 kept', body: set('llm', { provider: 'anthropic', model: null, temperature: 0.4 }), expect: ok((c) => c.llm.temperature === 0.4) },
  { rule: 'maxTokens 4096 ok', body: set('llm.maxTokens', 4096), expect: ok() },
  { rule: 'maxTokens 0', body: set('llm.maxTokens', 0), expect: bad(['llm', 'maxTokens'], 'greater_than_equal') },
  { rule: 'maxTokens 4097', body: set('llm.maxTokens', 4097), expect: bad(['llm', 'maxTokens'], 'less_than_equal') },
  { rule: 'maxTokens int', body: set('llm.maxTokens', 10.5), expect: bad(['llm', 'maxTokens'], 'int_type') },
  { rule: 'prewarm bool', body: set('llm.prewarm', 'yes'), expect: bad(['llm', 'prewarm'], 'bool_type') },
  // stt
  { rule: 'stt.model off-catalog', body: set('stt', { provider: 'soniox', model: 'stt-rt-v9' }), expect: bad(['stt', 'model'], 'value_error', /stt-rt-v9.*soniox/) },
  { rule: 'stt.interruptionMinWords 10 ok', body: set('stt.interruptionMinWords', 10), expect: ok() },
  { rule: 'stt.interruptionMinWords 11', body: set('stt.interruptionMinWords', 11), expect: bad(['stt', 'interruptionMinWords'], 'less_than_equal') },
  { rule: 'chosen stt block materialised', body: base, expect: ok((c) => c.stt.soniox?.maxEndpointDelayMs === 2000 && c.stt.soniox.endpointSensitivity === 0.3) },
  { rule: 'other stt blocks coexist', body: set('stt', { provider: 'soniox', deepgram: { eotThreshold: 0.6 } }), expect: ok((c) => c.stt.deepgram.eotThreshold === 0.6 && c.stt.deepgram.eotTimeoutMs === 2000) },
  { rule: 'other stt blocks still range-checked', body: set('stt', { provider: 'soniox', deepgram: { eotThreshold: 0.2 } }), expect: bad(['stt', 'deepgram', 'eotThreshold'], 'greater_than_equal') },
  { rule: 'soniox.endpointSensitivity', body: set('stt.soniox', { endpointSensitivity: 1.5 }), expect: bad(['stt', 'soniox', 'endpointSensitivity'], 'less_than_equal') },
  { rule: 'soniox.endpointLatencyAdjustmentLevel', body: set('stt.soniox', { endpointLatencyAdjustmentLevel: 4 }), expect: bad(['stt', 'soniox', 'endpointLatencyAdjustmentLevel'], 'less_than_equal') },
  { rule: 'soniox.maxEndpointDelayMs', body: set('stt.soniox', { maxEndpointDelayMs: 400 }), expect: bad(['stt', 'soniox', 'maxEndpointDelayMs'], 'greater_than_equal') },
  { rule: 'soniox.contextTerms ok', body: set('stt.soniox', { contextTerms: 'Acme, Widget' }), expect: ok() },
  { rule: 'deepgram.eotThreshold ok', body: set('stt', { provider: 'deepgram', deepgram: { eotThreshold: 0.9, eotTimeoutMs: 60000, keyterms: 'Acme' } }), expect: ok() },
  { rule: 'deepgram.eotThreshold > 0.9', body: set('stt', { provider: 'deepgram', deepgram: { eotThreshold: 0.95 } }), expect: bad(['stt', 'deepgram', 'eotThreshold'], 'less_than_equal') },
  { rule: 'deepgram.eotTimeoutMs > 60000', body: set('stt', { provider: 'deepgram', deepgram: { eotTimeoutMs: 60001 } }), expect: bad(['stt', 'deepgram', 'eotTimeoutMs'], 'less_than_equal') },
  { rule: 'assemblyai block ok', body: set('stt', { provider: 'assemblyai', assemblyai: { mode: 'max_accuracy', voiceFocus: 'off', keyterms: 'a,b' } }), expect: ok() },
  { rule: 'assemblyai.mode enum', body: set('stt', { provider: 'assemblyai', assemblyai: { mode: 'fast' } }), expect: bad(['stt', 'assemblyai', 'mode'], 'literal_error') },
  { rule: 'assemblyai.keyterms ≤ 100 terms', body: set('stt', { provider: 'assemblyai', assemblyai: { keyterms: Array.from({ length: 101 }, (_, i) => `t${i}`).join(',') } }), expect: bad(['stt', 'assemblyai', 'keyterms'], 'too_long') },
  { rule: 'assemblyai.keyterms each ≤ 50', body: set('stt', { provider: 'assemblyai', assemblyai: { keyterms: `ok,${'x'.repeat(51)}` } }), expect: bad(['stt', 'assemblyai', 'keyterms'], 'string_too_long') },
  { rule: 'assemblyai.voiceFocus enum', body: set('stt', { provider: 'assemblyai', assemblyai: { voiceFocus: 'mid-field' } }), expect: bad(['stt', 'assemblyai', 'voiceFocus'], 'literal_error') },
  { rule: 'assemblyai.voiceFocusThreshold', body: set('stt', { provider: 'assemblyai', assemblyai: { voiceFocusThreshold: 1.1 } }), expect: bad(['stt', 'assemblyai', 'voiceFocusThreshold'], 'less_than_equal') },
  { rule: 'sarvam block ok', body: () => ({ ...base(), stt: { provider: 'sarvam', sarvam: { mode: 'codemix', highVadSensitivity: true } }, languages: ['en', 'hi'] }), expect: ok() },
  { rule: 'sarvam.mode enum', body: set('stt', { provider: 'sarvam', sarvam: { mode: 'translate' } }), expect: bad(['stt', 'sarvam', 'mode'], 'literal_error') },
  { rule: 'sarvam.highVadSensitivity bool', body: set('stt', { provider: 'sarvam', sarvam: { highVadSensitivity: 1 } }), expect: bad(['stt', 'sarvam', 'highVadSensitivity'], 'bool_type') },
  { rule: 'cartesia defaults ok', body: set('stt', { provider: 'cartesia' }), expect: ok((c) => c.stt.cartesia.turnStartThreshold === 0.8) },
  { rule: 'cartesia.turnStartThreshold range', body: set('stt', { provider: 'cartesia', cartesia: { turnStartThreshold: 0.95 } }), expect: bad(['stt', 'cartesia', 'turnStartThreshold'], 'less_than_equal') },
  { rule: 'cartesia.turnEndTimeoutMs range', body: set('stt', { provider: 'cartesia', cartesia: { turnEndTimeoutMs: 600 } }), expect: bad(['stt', 'cartesia', 'turnEndTimeoutMs'], 'greater_than_equal') },
  { rule: 'cartesia.keyterms ≤ 1200 chars', body: set('stt', { provider: 'cartesia', cartesia: { keyterms: 'k'.repeat(1201) } }), expect: bad(['stt', 'cartesia', 'keyterms'], 'string_too_long') },
  { rule: 'cartesia end < eager', body: set('stt', { provider: 'cartesia', cartesia: { turnEndThreshold: 0.45, turnEagerEndThreshold: 0.4 } }), expect: bad(['stt', 'cartesia', 'turnEndThreshold'], 'value_error', /turnEndThreshold < turnEagerEndThreshold < turnStartThreshold/) },
  { rule: 'cartesia eager < start', body: set('stt', { provider: 'cartesia', cartesia: { turnEagerEndThreshold: 0.7, turnStartThreshold: 0.6 } }), expect: bad(['stt', 'cartesia', 'turnEagerEndThreshold'], 'value_error') },
  // tts
  { rule: 'chosen tts block materialised', body: base, expect: ok((c) => c.tts.elevenlabs?.similarityBoost === 0.75 && c.tts.elevenlabs.applyTextNormalization === 'auto') },
  { rule: 'tts.model off-catalog', body: set('tts', { provider: 'cartesia', model: 'sonic-9' }), expect: bad(['tts', 'model'], 'value_error', /sonic-9.*cartesia/) },
  { rule: 'elevenlabs.speed', body: set('tts.elevenlabs', { speed: 1.3 }), expect: bad(['tts', 'elevenlabs', 'speed'], 'less_than_equal') },
  { rule: 'elevenlabs.stability', body: set('tts.elevenlabs', { stability: -0.1 }), expect: bad(['tts', 'elevenlabs', 'stability'], 'greater_than_equal') },
  { rule: 'elevenlabs.applyTextNormalization', body: set('tts.elevenlabs', { applyTextNormalization: 'maybe' }), expect: bad(['tts', 'elevenlabs', 'applyTextNormalization'], 'literal_error') },
  { rule: 'cartesia tts ok', body: set('tts', { provider: 'cartesia', cartesia: { speed: 1.5, volume: 2 } }), expect: ok((c) => c.tts.cartesia.volume === 2) },
  { rule: 'cartesia tts default volume 1.5', body: set('tts', { provider: 'cartesia' }), expect: ok((c) => c.tts.cartesia.volume === 1.5) },
  { rule: 'cartesia.volume range', body: set('tts', { provider: 'cartesia', cartesia: { volume: 2.5 } }), expect: bad(['tts', 'cartesia', 'volume'], 'less_than_equal') },
  { rule: 'openai.speed range', body: set('tts', { provider: 'openai', openai: { speed: 2.5 } }), expect: bad(['tts', 'openai', 'speed'], 'less_than_equal') },
  { rule: 'sarvam tts ok', body: () => ({ ...base(), tts: { provider: 'sarvam', sarvam: { pace: 2, temperature: 0.01 } } }), expect: ok() },
  { rule: 'sarvam.temperature range', body: set('tts', { provider: 'sarvam', sarvam: { temperature: 0 } }), expect: bad(['tts', 'sarvam', 'temperature'], 'greater_than_equal') },
  { rule: 'xai voice ok', body: set('tts', { provider: 'xai', voice: 'rex' }), expect: ok() },
  { rule: 'xai voice restricted', body: set('tts', { provider: 'xai', voice: 'alloy' }), expect: bad(['tts', 'voice'], 'literal_error', /ara, eve, leo, rex, sal/) },
  { rule: 'xai has no model selector', body: set('tts', { provider: 'xai', model: 'grok-voice' }), expect: bad(['tts', 'model'], 'value_error', /no model selector/) },
  { rule: 'xai.optimizeStreamingLatency', body: set('tts', { provider: 'xai', xai: { optimizeStreamingLatency: 3 } }), expect: bad(['tts', 'xai', 'optimizeStreamingLatency'], 'less_than_equal') },
  { rule: 'xai.speed', body: set('tts', { provider: 'xai', xai: { speed: 1.6 } }), expect: bad(['tts', 'xai', 'speed'], 'less_than_equal') },
  { rule: 'inworld ok', body: set('tts', { provider: 'inworld', inworld: { speakingRate: 1.5, temperature: 2 } }), expect: ok() },
  { rule: 'inworld.temperature', body: set('tts', { provider: 'inworld', inworld: { temperature: 2.1 } }), expect: bad(['tts', 'inworld', 'temperature'], 'less_than_equal') },
  { rule: 'local engines ok', body: () => ({ ...base(), llm: { provider: 'local', model: null }, stt: { provider: 'local' }, tts: { provider: 'local' } }), expect: ok((c) => c.llm.model === 'local-demo') },
  { rule: 'local stt is English only', body: () => ({ ...base(), stt: { provider: 'local' }, tts: { provider: 'local' }, languages: ['en', 'de'] }), expect: bad(['languages'], 'value_error', /de.*whisper-tiny\.en/) },
  // noise gate and sounds
  { rule: 'noiseGate defaults', body: base, expect: ok((c) => c.noiseGate.enabled === true && c.noiseGate.model === 'voice-focus' && c.noiseGate.enhancementLevel === 0.8) },
  { rule: 'noiseGate.model enum', body: set('noiseGate', { model: 'krisp' }), expect: bad(['noiseGate', 'model'], 'literal_error') },
  { rule: 'noiseGate.enhancementLevel', body: set('noiseGate', { enhancementLevel: 1.5 }), expect: bad(['noiseGate', 'enhancementLevel'], 'less_than_equal') },
  { rule: 'sound defaults', body: base, expect: ok((c) => c.backgroundSound.volume === 0.08 && c.taskSound.startAfterMs === 800 && c.acknowledgeSounds.probability === 0.8 && c.fillerWords.thresholdMs === 300) },
  { rule: 'backgroundSound ok', body: set('backgroundSound', { enabled: true, sound: 'office', volume: 0.2 }), expect: ok() },
  { rule: 'backgroundSound.sound enum', body: set('backgroundSound', { sound: 'jungle' }), expect: bad(['backgroundSound', 'sound'], 'literal_error') },
  { rule: 'backgroundSound.volume', body: set('backgroundSound', { volume: 1.5 }), expect: bad(['backgroundSound', 'volume'], 'less_than_equal') },
  { rule: 'taskSound.startAfterMs', body: set('taskSound', { startAfterMs: -1 }), expect: bad(['taskSound', 'startAfterMs'], 'greater_than_equal') },
  { rule: 'taskSound.sound enum', body: set('taskSound', { sound: 'drums' }), expect: bad(['taskSound', 'sound'], 'literal_error') },
  { rule: 'acknowledgeSounds ok', body: set('acknowledgeSounds', { enabled: true, words: 'mm-hmm, right', wordOrder: 'random' }), expect: ok() },
  { rule: 'acknowledgeSounds.words blank', body: set('acknowledgeSounds', { words: ' , ' }), expect: bad(['acknowledgeSounds', 'words'], 'value_error') },
  { rule: 'acknowledgeSounds.wordOrder', body: set('acknowledgeSounds', { wordOrder: 'shuffle' }), expect: bad(['acknowledgeSounds', 'wordOrder'], 'literal_error') },
  { rule: 'acknowledgeSounds.probability', body: set('acknowledgeSounds', { probability: 1.1 }), expect: bad(['acknowledgeSounds', 'probability'], 'less_than_equal') },
  { rule: 'acknowledgeSounds.thresholdS', body: set('acknowledgeSounds', { thresholdS: 0.1 }), expect: bad(['acknowledgeSounds', 'thresholdS'], 'greater_than_equal') },
  { rule: 'fillerWords.thresholdMs', body: set('fillerWords', { thresholdMs: 50 }), expect: bad(['fillerWords', 'thresholdMs'], 'greater_than_equal') },
  { rule: 'fillerWords.words each ≤ 50', body: set('fillerWords', { words: `so, ${'w'.repeat(51)}` }), expect: bad(['fillerWords', 'words'], 'string_too_long') },
  // webhook
  { rule: 'webhook string normalised', body: with_({ webhook: 'https://hooks.example.com/a' }), expect: ok((c) => JSON.stringify(c.webhook) === '{"url":"https://hooks.example.com/a","headers":{}}') },
  { rule: 'webhook object kept', body: with_({ webhook: { url: 'http://hooks.example.com/b', headers: { 'X-Token': 'abc' } } }), expect: ok((c) => c.webhook.headers['X-Token'] === 'abc') },
  { rule: 'webhook null', body: with_({ webhook: null }), expect: ok((c) => c.webhook === null) },
  { rule: 'webhook scheme', body: with_({ webhook: 'ftp://hooks.example.com' }), expect: bad(['webhook'], 'string_pattern_mismatch') },
  { rule: 'webhook object url scheme', body: with_({ webhook: { url: 'hooks.example.com' } }), expect: bad(['webhook', 'url'], 'string_pattern_mismatch') },
  { rule: 'webhook url ≤ 2048', body: with_({ webhook: `https://h.example.com/${'a'.repeat(2030)}` }), expect: bad(['webhook'], 'string_too_long') },
  { rule: 'webhook header name', body: with_({ webhook: { url: 'https://h.example.com', headers: { 'Bad Header': 'x' } } }), expect: bad(['webhook', 'headers', 'Bad Header']) },
  { rule: 'webhook private IP refused, naming the setting', body: with_({ webhook: 'http://10.1.2.3/hook' }), expect: bad(['webhook', 'url'], 'value_error', /10\.1\.2\.3 is not a public address: the host is private .*OUTBOUND_ALLOW_HOSTS/) },
  { rule: 'webhook object url loopback', body: with_({ webhook: { url: 'http://127.0.0.1:9000/hook', headers: {} } }), expect: bad(['webhook', 'url'], 'value_error', /OUTBOUND_ALLOW_HOSTS/) },
  { rule: 'webhook localhost', body: with_({ webhook: 'http://localhost:8080/events' }), expect: bad(['webhook', 'url'], 'value_error', /localhost.*OUTBOUND_ALLOW_HOSTS/) },
  { rule: 'webhook link-local metadata address', body: with_({ webhook: 'http://169.254.169.254/latest' }), expect: bad(['webhook', 'url'], 'value_error', /private/) },
  { rule: 'webhook IPv6 unique-local', body: with_({ webhook: 'https://[fd00::5]/hook' }), expect: bad(['webhook', 'url'], 'value_error', /OUTBOUND_ALLOW_HOSTS/) },
  { rule: 'webhook blocked host names the block list', body: with_({ webhook: 'https://blocked.example.com/hook' }), expect: bad(['webhook', 'url'], 'value_error', /blocked by OUTBOUND_BLOCK_HOSTS/) },
  { rule: 'function url private IP names the setting', body: tools(fn({}, { server: { url: 'http://10.9.9.9/x' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error', /OUTBOUND_ALLOW_HOSTS/) },
  { rule: 'webhook unknown key', body: with_({ webhook: { url: 'https://h.example.com', secret: 'x' } }), expect: bad(['webhook', 'secret'], 'extra_forbidden') },
  // flags
  { rule: 'flags defaults', body: base, expect: ok((c) => c.voicemailDetection === true && c.enableSummarization === false && c.recordInProviderConsole === null) },
  { rule: 'recordInProviderConsole bool', body: with_({ recordInProviderConsole: 'yes' }), expect: bad(['recordInProviderConsole'], 'bool_type') },
  { rule: 'enableSummarization bool', body: with_({ enableSummarization: 1 }), expect: bad(['enableSummarization'], 'bool_type') },
  { rule: 'voicemailDetection bool', body: with_({ voicemailDetection: null }), expect: bad(['voicemailDetection'], 'bool_type') },
  { rule: 'voicemailMessage default null', body: base, expect: ok((c) => c.voicemailMessage === null) },
  { rule: 'voicemailMessage kept (placeholders and all)', body: with_({ voicemailMessage: 'Hi {{first_name}}, call us back.' }), expect: ok((c) => c.voicemailMessage === 'Hi {{first_name}}, call us back.') },
  { rule: 'voicemailMessage ≤ 1000', body: with_({ voicemailMessage: 'a'.repeat(1001) }), expect: bad(['voicemailMessage'], 'string_too_long') },
  { rule: 'voicemailMessage 1000 ok', body: with_({ voicemailMessage: 'a'.repeat(1000) }), expect: ok() },
  { rule: 'voicemailMessage not empty', body: with_({ voicemailMessage: '' }), expect: bad(['voicemailMessage'], 'string_too_short') },
  { rule: 'voicemailMessage not blank', body: with_({ voicemailMessage: '   ' }), expect: bad(['voicemailMessage']) },
  { rule: 'voicemailMessage a string', body: with_({ voicemailMessage: 5 }), expect: bad(['voicemailMessage'], 'string_type') },
  // context variables
  { rule: 'contextVariables built-ins stripped', body: with_({ contextVariables: { name: 'Ann', current_time: 'x', user_number: '1' } }), expect: ok((c) => JSON.stringify(c.contextVariables) === '{"name":"Ann"}') },
  { rule: 'contextVariables ≤ 200 keys', body: with_({ contextVariables: Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`k${i}`, 'v'])) }), expect: bad(['contextVariables'], 'too_long') },
  { rule: 'contextVariables 200 keys ok', body: with_({ contextVariables: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, 'v'])) }), expect: ok() },
  { rule: 'contextVariables value ≤ 2000', body: with_({ contextVariables: { big: 'v'.repeat(2001) } }), expect: bad(['contextVariables', 'big'], 'string_too_long') },
  { rule: 'contextVariables values are strings', body: with_({ contextVariables: { n: 5 } }), expect: bad(['contextVariables', 'n'], 'string_type') },
  { rule: 'NUL characters refused', body: with_({ systemPrompt: 'a\u0000b' }), expect: bad(['systemPrompt'], 'string_unicode') },
  // tools: seeding and saved references
  { rule: 'end_call seeded', body: base, expect: ok((c) => c.tools.length === 1 && c.tools[0].type === 'endCall' && c.tools[0].name === 'end_call' && c.tools[0].config.customMessages[0] === 'Goodbye!') },
  { rule: 'saved tool reference ok', body: () => ({ ...base(), tools: [savedTool.toUpperCase()] }), expect: ok((c) => c.tools[0] === savedTool && c.tools.length === 2) },
  { rule: 'saved endCall tool → no seeding', body: () => ({ ...base(), tools: [savedEndCallTool] }), expect: ok((c) => c.tools.length === 1) },
  { rule: 'saved tool not found', body: tools('00000000-0000-4000-8000-000000000000'), expect: bad(['tools', 0], 'value_error', /not found/) },
  { rule: 'saved tool archived', body: () => ({ ...base(), tools: [fn(), archivedTool] }), expect: bad(['tools', 1], 'value_error', /archived/) },
  { rule: 'saved tool with an incomplete definition', body: () => ({ ...base(), tools: [blankTool] }), expect: bad(['tools', 0], 'value_error', /needs a destination/) },
  { rule: 'saved tool of another organization', body: () => ({ ...base(), tools: [otherOrgTool] }), expect: bad(['tools', 0], 'value_error', /not found/) },
  { rule: 'saved tool ref must be a UUID', body: tools('weather'), expect: bad(['tools', 0], 'uuid_parsing') },
  { rule: 'tool entry type', body: tools(42), expect: bad(['tools', 0], 'union_error', /saved tool UUID string or an inline tool object/) },
  { rule: 'calculator not inline', body: tools({ type: 'calculator', name: 'calc', config: {} }), expect: bad(['tools', 0, 'type'], 'literal_error') },
  { rule: 'inline config required', body: tools({ type: 'testTool', name: 't' }), expect: bad(['tools', 0, 'config'], 'missing') },
  { rule: 'sendDtmf defaults', body: tools({ type: 'sendDtmf', config: {} }), expect: ok((c) => c.tools[0].name === 'send_dtmf' && /keypad/.test(c.tools[0].description) && JSON.stringify(c.tools[0].config) === '{}') },
  { rule: 'sendDtmf named', body: tools({ type: 'sendDtmf', name: 'press_keys', description: 'Keys.', config: {} }), expect: ok((c) => c.tools[0].name === 'press_keys' && c.tools[0].description === 'Keys.') },
  { rule: 'sendDtmf config required', body: tools({ type: 'sendDtmf' }), expect: bad(['tools', 0, 'config'], 'missing') },
  { rule: 'sendDtmf config strict', body: tools({ type: 'sendDtmf', config: { toneMs: 100 } }), expect: bad(['tools', 0, 'config', 'toneMs'], 'extra_forbidden') },
  { rule: 'sendDtmf unknown field', body: tools({ type: 'sendDtmf', config: {}, digits: '1' }), expect: bad(['tools', 0, 'digits'], 'extra_forbidden') },
  { rule: 'two sendDtmf tools: names collide', body: tools({ type: 'sendDtmf', config: {} }, { type: 'sendDtmf', config: {} }), expect: bad(['tools', 1, 'name'], 'value_error', /Duplicate tool name/) },
  { rule: 'inline unknown field', body: tools(fn({ extra: 1 })), expect: bad(['tools', 0, 'extra'], 'extra_forbidden') },
  // inline names
  { rule: 'tool name required', body: tools({ type: 'function', config: { server: { url: 'https://a.example.com' } } }), expect: bad(['tools', 0, 'name'], 'missing') },
  { rule: 'tool name pattern', body: tools(fn({ name: 'get weather' })), expect: bad(['tools', 0, 'name'], 'string_pattern_mismatch') },
  { rule: 'tool name 64 ok', body: tools(fn({ name: 'n'.repeat(64) })), expect: ok() },
  { rule: 'tool name ≤ 64', body: tools(fn({ name: 'n'.repeat(65) })), expect: bad(['tools', 0, 'name'], 'string_too_long') },
  { rule: 'tool names unique after sanitization', body: tools(fn({ name: 'Get-Weather' }), fn({ name: 'get_weather' })), expect: bad(['tools', 1, 'name'], 'value_error', /get_weather/) },
  { rule: 'inline name collides with saved tool function name', body: () => ({ ...base(), tools: [savedTool, fn({ name: 'weather-lookup' })] }), expect: bad(['tools', 1, 'name'], 'value_error') },
  { rule: 'reserved name safe_calculator', body: tools(fn({ name: 'safe_calculator' })), expect: bad(['tools', 0, 'name'], 'value_error', /reserved/) },
  { rule: 'reserved name retrieve_from_knowledge_base', body: tools(fn({ name: 'Retrieve-From-Knowledge-Base' })), expect: bad(['tools', 0, 'name'], 'value_error', /reserved/) },
  { rule: 'end_call reserved for endCall', body: tools(fn({ name: 'end_call' })), expect: bad(['tools', 0, 'name'], 'value_error', /endCall/) },
  // inline function
  { rule: 'function defaults', body: tools(fn()), expect: ok((c) => { const t = c.tools[0]; return t.config.server.method === 'POST' && t.config.server.timeout_ms === 10000 && t.config.async === false && t.config.parameters === null && t.config.messagesOrder === 'random'; }) },
  { rule: 'function url with {{var}} in host accepted', body: tools(fn({}, { server: { url: 'https://{{tenant}}.example.com/api/{id}' } })), expect: ok() },
  { rule: 'function url scheme', body: tools(fn({}, { server: { url: 'ftp://a.example.com' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'string_pattern_mismatch') },
  { rule: 'function url private IP', body: tools(fn({}, { server: { url: 'http://10.1.2.3/x' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error', /not a public address/) },
  { rule: 'function url loopback', body: tools(fn({}, { server: { url: 'http://127.0.0.1:8080/x' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error') },
  { rule: 'function url link-local', body: tools(fn({}, { server: { url: 'http://169.254.169.254/latest' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error') },
  { rule: 'function url CGNAT', body: tools(fn({}, { server: { url: 'http://100.64.0.7/' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error') },
  { rule: 'function url IPv6 loopback', body: tools(fn({}, { server: { url: 'http://[::1]:80/' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error') },
  { rule: 'function url localhost (resolves to loopback)', body: tools(fn({}, { server: { url: 'http://localhost:9000/' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error') },
  { rule: 'function url blocked host', body: tools(fn({}, { server: { url: 'https://api.blocked.example.com/x' } })), expect: bad(['tools', 0, 'config', 'server', 'url'], 'value_error', /blocked/) },
  { rule: 'function url position in list', body: tools(fn({ name: 'a' }), fn({ name: 'b' }), fn({ name: 'c' }, { server: { url: 'http://192.168.1.1/' } })), expect: bad(['tools', 2, 'config', 'server', 'url'], 'value_error') },
  { rule: 'function timeout_ms', body: tools(fn({}, { server: { url: 'https://a.example.com', timeout_ms: 999 } })), expect: bad(['tools', 0, 'config', 'server', 'timeout_ms'], 'greater_than_equal') },
  { rule: 'function method', body: tools(fn({}, { server: { url: 'https://a.example.com', method: 'TRACE' } })), expect: bad(['tools', 0, 'config', 'server', 'method'], 'literal_error') },
  { rule: 'function parameters schema ok', body: tools(fn({}, { parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } })), expect: ok() },
  { rule: 'function parameters required must exist', body: tools(fn({}, { parameters: { type: 'object', properties: {}, required: ['city'] } })), expect: bad(['tools', 0, 'config', 'parameters', 'required', 0], 'value_error') },
  { rule: 'function parameters type object', body: tools(fn({}, { parameters: { type: 'array' } })), expect: bad(['tools', 0, 'config', 'parameters', 'type'], 'literal_error') },
  { rule: 'function messages ≤ 5', body: tools(fn({}, { messages: ['1', '2', '3', '4', '5', '6'] })), expect: bad(['tools', 0, 'config', 'messages'], 'too_long') },
  { rule: 'function messagesOrder', body: tools(fn({}, { messagesOrder: 'sequential' })), expect: bad(['tools', 0, 'config', 'messagesOrder'], 'literal_error') },
  // inline endCall
  { rule: 'endCall default name, no extra seeding', body: tools({ type: 'endCall', config: { messageType: 'none' } }), expect: ok((c) => c.tools.length === 1 && c.tools[0].name === 'end_call') },
  { rule: 'endCall custom needs a message', body: tools({ type: 'endCall', config: { messageType: 'custom', customMessages: [' '] } }), expect: bad(['tools', 0, 'config', 'customMessages'], 'value_error') },
  { rule: 'endCall audio needs recording', body: tools({ type: 'endCall', config: { messageType: 'audio' } }), expect: bad(['tools', 0, 'config', 'audioRecordingId'], 'missing') },
  { rule: 'endCall customMessages ≤ 5', body: tools({ type: 'endCall', config: { customMessages: ['1', '2', '3', '4', '5', '6'] } }), expect: bad(['tools', 0, 'config', 'customMessages'], 'too_long') },
  // inline transferCall
  { rule: 'transferCall E.164 ok', body: tools({ type: 'transferCall', name: 'xfer', config: { destination: '+14155550100' } }), expect: ok((c) => c.tools[0].config.timeout === 30 && c.tools[0].config.recordTransfer === true && c.tools[0].config.customMessage === null) },
  { rule: 'transferCall SIP ok', body: tools({ type: 'transferCall', name: 'xfer', config: { destination: 'PJSIP/123', timeout: 300 } }), expect: ok() },
  { rule: 'transferCall destination pattern', body: tools({ type: 'transferCall', name: 'xfer', config: { destination: '555-1234' } }), expect: bad(['tools', 0, 'config', 'destination'], 'string_pattern_mismatch') },
  { rule: 'transferCall destination required', body: tools({ type: 'transferCall', name: 'xfer', config: {} }), expect: bad(['tools', 0, 'config', 'destination'], 'missing') },
  { rule: 'transferCall timeout ≤ 300', body: tools({ type: 'transferCall', name: 'xfer', config: { destination: '+14155550100', timeout: 301 } }), expect: bad(['tools', 0, 'config', 'timeout'], 'less_than_equal') },
  { rule: 'transferCall messageType rejected inline', body: tools({ type: 'transferCall', name: 'xfer', config: { destination: '+14155550100', messageType: 'audio' } }), expect: bad(['tools', 0, 'config', 'messageType'], 'extra_forbidden') },
  { rule: 'transferCall audioRecordingId rejected inline', body: tools({ type: 'transferCall', name: 'xfer', config: { destination: '+14155550100', audioRecordingId: 'r' } }), expect: bad(['tools', 0, 'config', 'audioRecordingId'], 'extra_forbidden') },
  // inline query
  { rule: 'query ok', body: () => ({ ...base(), tools: [{ type: 'query', name: 'kb', config: { knowledgeBases: [{ name: 'FAQ', description: 'Answers', documentIds: [documentId] }] } }] }), expect: ok((c) => c.tools[0].config.timeout === 5) },
  { rule: 'query knowledgeBases ≥ 1', body: tools({ type: 'query', name: 'kb', config: { knowledgeBases: [] } }), expect: bad(['tools', 0, 'config', 'knowledgeBases'], 'too_short') },
  { rule: 'query documentIds ≥ 1', body: tools({ type: 'query', name: 'kb', config: { knowledgeBases: [{ name: 'a', description: 'b', documentIds: [] }] } }), expect: bad(['tools', 0, 'config', 'knowledgeBases', 0, 'documentIds'], 'too_short') },
  { rule: 'query description required', body: tools({ type: 'query', name: 'kb', config: { knowledgeBases: [{ name: 'a', documentIds: ['00000000-0000-4000-8000-000000000001'] }] } }), expect: bad(['tools', 0, 'config', 'knowledgeBases', 0, 'description'], 'missing') },
  { rule: 'query unknown document', body: tools({ type: 'query', name: 'kb', config: { knowledgeBases: [{ name: 'a', description: 'b', documentIds: ['00000000-0000-4000-8000-000000000001'] }] } }), expect: bad(['tools', 0, 'config', 'knowledgeBases', 0, 'documentIds', 0], 'value_error', /not found/) },
  { rule: 'query timeout 1..30', body: tools({ type: 'query', name: 'kb', config: { knowledgeBases: [{ name: 'a', description: 'b', documentIds: ['00000000-0000-4000-8000-000000000001'] }], timeout: 31 } }), expect: bad(['tools', 0, 'config', 'timeout'], 'less_than_equal') },
  // inline testTool
  { rule: 'testTool defaults', body: tools({ type: 'testTool', name: 'sim', config: {} }), expect: ok((c) => c.tools[0].config.delaySeconds === 6 && c.tools[0].config.outcome === 'success' && c.tools[0].config.responseText === '') },
  { rule: 'testTool delaySeconds ≥ 0.5', body: tools({ type: 'testTool', name: 'sim', config: { delaySeconds: 0.4 } }), expect: bad(['tools', 0, 'config', 'delaySeconds'], 'greater_than_equal') },
  { rule: 'testTool delaySeconds ≤ 30', body: tools({ type: 'testTool', name: 'sim', config: { delaySeconds: 31 } }), expect: bad(['tools', 0, 'config', 'delaySeconds'], 'less_than_equal') },
  { rule: 'testTool outcome', body: tools({ type: 'testTool', name: 'sim', config: { outcome: 'maybe' } }), expect: bad(['tools', 0, 'config', 'outcome'], 'literal_error') },
];

for (const c of cases) {
  test(`rule: ${c.rule}`, async (t) => {
    const body = c.body();
    const r = await s.request('POST', '/agents', { key, body });
    if ('ok' in c.expect) {
      t.is(r.status, 201, JSON.stringify(r.body));
      if (c.expect.check) t.true(c.expect.check(r.body.config) !== false, JSON.stringify(r.body.config));
      // every accepted body round-trips through GET unchanged
      const got = await s.request('GET', `/agents/${r.body.uuid}`, { key });
      t.deepEqual(got.body, r.body);
    } else {
      t.is(r.status, 400, JSON.stringify(r.body));
      t.deepEqual(Object.keys(r.body), ['detail']);
      t.is(r.body.detail.error, 'invalid_agent_config');
      t.true(Array.isArray(r.body.detail.details));
      for (const d of r.body.detail.details) t.deepEqual(Object.keys(d).sort(), ['loc', 'msg', 'type']);
      const exp = c.expect;
      const hit = r.body.detail.details.find((d: { loc: unknown }) => JSON.stringify(d.loc) === JSON.stringify(exp.loc));
      t.truthy(hit, `expected loc ${JSON.stringify(exp.loc)} in ${JSON.stringify(r.body.detail.details)}`);
      if (hit && exp.type) t.is(hit.type, exp.type, JSON.stringify(hit));
      if (hit && exp.msg) t.regex(hit.msg, exp.msg);
    }
  });
}

test('a rejected create persists nothing', async (t) => {
  const r = await s.request('POST', '/agents', { key, body: { ...base(), name: 'never-stored', maxTokens: 5 } });
  t.is(r.status, 400);
  t.is(await s.db.oneFirst(sql.unsafe`SELECT count(*)::int FROM agents WHERE name = 'never-stored'`), 0);
});

test('all failures are reported together', async (t) => {
  const r = await s.request('POST', '/agents', { key, body: { ...base(), maxCallDurationS: 5, userIdleTimeoutS: 1, bogus: true } });
  t.is(r.status, 400);
  const locs = [...new Set(r.body.detail.details.map((d: { loc: unknown[] }) => d.loc.join('.')))].sort();
  t.deepEqual(locs, ['bogus', 'maxCallDurationS', 'userIdleTimeoutS']);
});
