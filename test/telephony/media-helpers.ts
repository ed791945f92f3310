// Shared set-up of the phone-call end-to-end tests: a test server whose media builds fake engines per scenario
// (keyed by the agent name) or the real local engines, the fake Twilio (REST + webhooks) and its media streams
// linked the way Twilio links them (answer → <Connect><Stream> → stream; call update or hang-up → stop; stream
// closed by us → the call completes), and a Temporal worker for the post-call and transfer-recording workflows.
import type { TestFn } from 'ava';
import type { EngineFactory } from '../../media/deps.ts';
import { DemoLlm } from '../../media/services/llm/local.ts';
import { createLocalStt } from '../../media/services/stt/local.ts';
import { createLocalTts } from '../../media/services/tts/local.ts';
import { createVad } from '../../media/vad/index.ts';
import { fakeEngines, type FakeScenario } from '../fakes/engines.ts';
import { FakeTwilio, type FakeCall } from '../fakes/twilio.ts';
import { FakeCarrierStream, type FakeStreamOptions } from '../fakes/twilio-media.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { VENDOR_TEST_KEYS } from './rest-helpers.ts';
import { until } from '../helpers/wait.ts';
import { startTestWorker } from '../helpers/worker.ts';

export class Scenarios {
  private readonly map = new Map<string, FakeScenario>();
  readonly made = new Map<string, ReturnType<typeof fakeEngines>>();
  private n = 0;
  add(s: FakeScenario): string {
    const name = `phone-scenario-${++this.n}`;
    this.map.set(name, s);
    return name;
  }
  /** fake engines for a registered scenario name, else the real local engines (Silero, pocketsphinx, eSpeak, demo LLM) */
  readonly factory: EngineFactory = async ({ config }) => {
    const s = this.map.get(config.name);
    if (s) {
      if ((s as { failBuild?: boolean }).failBuild) throw new Error('engine credentials missing');
      const e = fakeEngines(s);
      this.made.set(config.name, e);
      return e;
    }
    return {
      engines: {
        llm: new DemoLlm('demo'),
        stt: createLocalStt('pocketsphinx', { corpus: [config.systemPrompt, 'what time is it', 'good bye'] }),
        tts: createLocalTts({ languages: config.languages, model: 'espeak-ng' }),
      },
      vad: await createVad(),
    };
  };
}

export interface PhoneRig {
  s: TestServer;
  twilio: FakeTwilio;
  scenarios: Scenarios;
  /** media streams by CallSid */
  streams: Map<string, FakeCarrierStream>;
  dials: FakeCall[];
  close(): Promise<void>;
}

export async function startPhoneRig(queue: string, env: Record<string, string> = {}): Promise<PhoneRig> {
  const twilio = await FakeTwilio.start();
  const scenarios = new Scenarios();
  const s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: queue, OUTBOUND_ALLOW_HOSTS: '127.0.0.1', TWILIO_API_BASE_URL: twilio.origin, ...VENDOR_TEST_KEYS, ...env },
    media: { engines: scenarios.factory },
  });
  const worker = s.temporal ? await startTestWorker(s, queue) : null;
  const streams = new Map<string, FakeCarrierStream>();
  const dials: FakeCall[] = [];
  twilio.on('dial', (c: FakeCall) => dials.push(c));
  // Twilio moves the call to the new TwiML (transfer) or hangs up: the stream stops
  twilio.on('update', (c: FakeCall) => streams.get(c.sid)?.stop());
  twilio.on('hangup', (c: FakeCall) => streams.get(c.sid)?.stop());
  return {
    s,
    twilio,
    scenarios,
    streams,
    dials,
    async close() {
      for (const m of streams.values()) m.hangup();
      await worker?.close();
      await s.close();
      await twilio.close();
    },
  };
}

/** An outbound Twilio line on a phone rig: an organization, and a Twilio account that owns the caller ID `from`. */
export interface TwilioLine {
  rig: PhoneRig;
  org: { orgId: string; apiKey: string };
  acc: { sid: string; token: string };
  /** our caller ID (a number of `acc`) */
  from: string;
  /** the number dialed */
  to: string;
}

/** startPhoneRig(queue), an organization (`orgOpts`) and a Twilio account owning `from`; close with line.rig.close(). */
export async function startTwilioLine(queue: string, from: string, to: string, orgOpts: Parameters<TestServer['createOrg']>[0]): Promise<TwilioLine> {
  const rig = await startPhoneRig(queue);
  const org = await rig.s.createOrg(orgOpts);
  const acc = rig.twilio.addAccount();
  rig.twilio.addNumber(acc.sid, from);
  return { rig, org, acc, from, to };
}

/**
 * A Twilio line for a test file: started (startTwilioLine) in a test.before hook, closed in test.after.always; its
 * rig, org and acc are set once the hook has run.
 */
export function twilioLine(test: TestFn, queue: string, from: string, to: string, orgOpts: Parameters<TestServer['createOrg']>[0]): TwilioLine {
  const line = { from, to } as TwilioLine;
  test.before(async () => {
    Object.assign(line, await startTwilioLine(queue, from, to, orgOpts));
  });
  test.after.always(async () => {
    await (line.rig as PhoneRig | undefined)?.close();
  });
  return line;
}

/** The body of POST /call (type outbound) dialing `line.to` from `line.from` over Twilio, with the agent given inline or by id. */
export function twilioDialBody(line: TwilioLine, agent: { agent: Record<string, unknown> } | { agentId: string }): Record<string, unknown> {
  return { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: line.from, auth: { account_sid: line.acc.sid, auth_token: line.acc.token } }, toNumber: line.to, ...agent };
}

/** POST /call on the line, then the carrier rings and answers: the call, and the <Stream> its answer TwiML names. */
export async function dialTwilio(line: TwilioLine, agent: { agent: Record<string, unknown> } | { agentId: string }) {
  const res = await line.rig.s.request('POST', '/call', { key: line.org.apiKey, body: twilioDialBody(line, agent) });
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST /call: ${res.status} ${JSON.stringify(res.body)}`);
  const callId = res.body.callId as string;
  const call = await dialOf(line.rig, callId);
  await line.rig.twilio.ring(call.sid);
  const twiml = await line.rig.twilio.answer(call.sid);
  if (!twiml.stream) throw new Error(`answer TwiML without <Stream>: ${twiml.xml}`);
  return { callId, call, twiml, stream: twiml.stream };
}

/** Open the media stream the answer TwiML asked for; when we close it, Twilio runs out of TwiML: `completed`. */
export function openStream(rig: PhoneRig, call: FakeCall, stream: { url: string; parameters: Record<string, string> }, opts: FakeStreamOptions = {}): FakeCarrierStream {
  const m = FakeCarrierStream.connect(stream.url, { callSid: call.sid, accountSid: call.accountSid, customParameters: stream.parameters }, opts);
  rig.streams.set(call.sid, m);
  void m.closed.then(() => {
    if (call.status === 'in-progress') void rig.twilio.finish(call.sid, 'completed', 5).catch(() => undefined);
  });
  return m;
}

/** The fake carrier's call for one of our calls (its answer URL names our call id). */
export async function dialOf(rig: PhoneRig, callId: string): Promise<FakeCall> {
  return until(() => rig.dials.find((c) => c.url?.endsWith(`/${callId}`)), { what: 'the dial to reach the fake carrier', timeoutMs: 10_000 });
}

/** Wait until the agent has been quiet (no new audio played) for `ms`, on any fake carrier's media stream. */
export async function agentQuiet(m: Pick<FakeCarrierStream, 'heardMs' | 'bufferedMs'>, ms = 400, timeoutMs = 20_000): Promise<void> {
  let last = m.heardMs;
  let since = performance.now();
  await until(() => {
    if (m.heardMs !== last || m.bufferedMs > 0) {
      last = m.heardMs;
      since = performance.now();
      return false;
    }
    return performance.now() - since >= ms;
  }, { what: 'agent quiet', timeoutMs });
}

/** The agent body every phone-call test starts from (local engines, no noise gate, a short deaf greeting, no voicemail detection); `over` adds or replaces top-level fields. */
export function phoneAgent(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'phone agent',
    systemPrompt: 'You are a phone test agent.',
    llm: { provider: 'local', model: 'local-demo' },
    stt: { provider: 'local' },
    tts: { provider: 'local' },
    noiseGate: { enabled: false },
    greeting: { firstMessages: ['Hello.'], interruptible: false },
    voicemailDetection: false,
    ...over,
  };
}
