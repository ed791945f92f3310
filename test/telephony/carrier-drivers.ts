// One driver per carrier of the scenario table: how the table-driven test (carriers.test.ts) works each
// carrier's local fake — accounts and numbers, the dial as the carrier received it, answering and opening the media
// stream the way that carrier does, terminal callbacks (genuine, forged, unsigned) and inbound calls.
import { generateKeyPairSync } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import type { FakePhoneStream } from '../fakes/carrier-phone.ts';
import { FakePlivo, type PlivoAccount, type PlivoCall } from '../fakes/plivo.ts';
import { FakeTelnyx, type TelnyxAccount, type TelnyxCall } from '../fakes/telnyx.ts';
import { FakeExotel, type ExotelAccount, type ExotelCall } from '../fakes/exotel.ts';
import { FakeVonage, websocketOf, type VonageAccount, type VonageCall } from '../fakes/vonage.ts';
import { until } from '../helpers/calls.ts';
import { detectDtmf } from '../fakes/dtmf-detector.ts';
import { resample } from '../../core/audio/resample.ts';

export type Signing = 'forged' | 'unsigned' | undefined;

export interface CarrierDriver {
  id: string;
  /** the carrier's name in error strings */
  name: string;
  start(): Promise<void>;
  /** the service's {base_url} (the voice webhook a number points at is {base}/telephony/{id}/voice) */
  setBase(baseUrl: string): void;
  close(): Promise<void>;
  /** env pointing the service at the fake (<CARRIER>_API_BASE_URL) */
  env(): Record<string, string>;
  account(): unknown;
  addNumber(acc: unknown, e164: string): void;
  creds(acc: unknown): Record<string, unknown>;
  wrongCreds(acc: unknown): Record<string, unknown>;
  secrets(acc: unknown): string[];
  /** a configuration of this account was saved (carriers whose portal URL the user pastes: Exotel) */
  configured?(acc: unknown, config: Record<string, any>): void;
  /** the carrier answers `e164` with this voice webhook */
  inboundPointsAt(acc: unknown, e164: string, voiceUrl: string): boolean;
  dialCount(): number;
  dialAt(i: number): unknown;
  checkDial(t: ExecutionContext, call: unknown, baseUrl: string, callId: string): void;
  checkMedia(t: ExecutionContext, phone: FakePhoneStream): void;
  answerAndConnect(acc: unknown, call: unknown): Promise<FakePhoneStream>;
  /** the carrier reports the connected call completed */
  completed(acc: unknown, call: unknown, durationS: number): Promise<void>;
  /** [raw carrier status, expected connectionStatus] of never-connected calls */
  terminal: Array<[string, string]>;
  finish(acc: unknown, call: unknown, raw: string, signing?: Signing): Promise<{ status: number }>;
  /** the account's next dial answers this HTTP error */
  failNextDial?(acc: unknown, status: number, message: string): void;
  /** the carrier drops buffered audio on our clear (false: Vonage, which has no clear message) */
  clear: boolean;
  /** carrier answering-machine detection (null: none, the heuristics run) */
  amd: null | {
    requested(call: unknown): boolean;
    machine(call: unknown): Promise<unknown>;
    hungUp(call: unknown): boolean;
    /** the carrier reports the end of the machine's greeting (absent: it does not, Plivo) */
    messageEnd?(call: unknown): Promise<unknown>;
  };
  /** the keys the agent pressed as this carrier got them: its DTMF API requests, or the tones its line heard (Goertzel) */
  keys(call: unknown, phone: FakePhoneStream): string;
  /** what the carrier received for a transfer of the call (null: not yet); absent: no transfer on this carrier */
  transferred?(call: unknown): string | null;
  /** a caller dials `to`: the webhook's answer, and the stream when the answer bridges to one */
  inbound(acc: unknown, to: string, from: string, signing?: Signing): Promise<{ status: number; phone: FakePhoneStream | null }>;
  /**
   * a caller dials `to` and the carrier delivers the inbound webhook twice (a retry: same carrier call id) before
   * the media connects: both answers' stream instructions (stream URL), then the stream of the first
   */
  inboundRetried(acc: unknown, to: string, from: string): Promise<{ statuses: number[]; answers: Array<string | null>; phone: FakePhoneStream | null }>;
  /** the inbound webhook of one call delivered `n` times at once: each answer's stream URL, and the first stream */
  inboundConcurrent?(acc: unknown, to: string, from: string, n: number): Promise<{ statuses: number[]; answers: Array<string | null>; phone: FakePhoneStream | null }>;
  /**
   * recordTransfer: the carrier's recording of the transferred leg is saved — its callback (to the URL the service gave
   * with the transfer) is delivered signed as the carrier signs it, and the file is served. Absent: no transfer recording.
   */
  recordedTransfer?(call: unknown, signing?: Signing): Promise<{ status: number }>;
  /** did the carrier get a whole-call recording request when the account's last inbound call was answered; absent: not offered */
  recordedInbound?(acc: unknown): boolean;
  /** did the carrier get a whole-call recording request with the dial (recordInProviderConsole); absent: not offered */
  recorded?(call: unknown): boolean | Promise<boolean>;
  /** an account with no application to answer its numbers (Plivo without default_app); absent: not a concept here */
  accountWithoutApplication?(): unknown;
  /** call-control carriers (no answer document): the account's next bridge command fails with this HTTP status */
  failNextBridge?(acc: unknown, status: number): void;
}

function plivoDriver(): CarrierDriver {
  let fake: FakePlivo;
  const dials: PlivoCall[] = [];
  const sign = (s: Signing) => (s === 'forged' ? 'not-the-token' : s === 'unsigned' ? null : undefined);
  let voiceUrl = '';
  // a number of the account without its own application: the account's answer_url (as the service sets it)
  const fallbackUrl = (a: PlivoAccount) => (voiceUrl ? `${voiceUrl}?account=${a.authId}` : undefined);
  return {
    id: 'plivo',
    name: 'Plivo',
    async start() {
      fake = await FakePlivo.start();
      fake.on('dial', (c: PlivoCall) => dials.push(c));
    },
    setBase: (b) => void (voiceUrl = `${b}/telephony/plivo/voice`),
    close: () => fake.close(),
    env: () => ({ PLIVO_API_BASE_URL: fake.origin }),
    account: () => fake.addAccount(),
    accountWithoutApplication: () => fake.addAccount({ defaultApp: false }),
    // Plivo's dial has no recording parameter: the answer XML asks for it (<Record recordSession="true">)
    recorded: async (c) => /<Record recordSession="true"/.test((await fake.answer((c as PlivoCall).callUuid)).body),
    addNumber: (acc, e164) => fake.addNumber((acc as PlivoAccount).authId, e164),
    creds: (acc) => ({ auth_id: (acc as PlivoAccount).authId, auth_token: (acc as PlivoAccount).token }),
    wrongCreds: (acc) => ({ auth_id: (acc as PlivoAccount).authId, auth_token: 'wrong-token' }),
    secrets: (acc) => [(acc as PlivoAccount).token],
    inboundPointsAt(acc, e164, url) {
      const a = acc as PlivoAccount;
      const n = a.numbers.get(e164.replace(/^\+/, ''));
      return !!n?.appId && a.apps.get(n.appId)?.answerUrl === `${url}?account=${a.authId}`;
    },
    dialCount: () => dials.length,
    dialAt: (i) => dials[i],
    checkDial(t, c, baseUrl, callId) {
      const call = c as PlivoCall;
      t.is(call.from, '14155550100');
      t.is(call.to, '14155550199');
      t.is(call.body.answer_url, `${baseUrl}/telephony/plivo/answer/${callId}`);
      t.is(call.body.hangup_url, `${baseUrl}/telephony/plivo/status/${callId}`);
      t.is(call.body.machine_detection, undefined, 'no AMD when the agent turns voicemail detection off');
    },
    checkMedia(t, phone) {
      t.true(phone.payloadSizes.length > 0 && phone.payloadSizes.every((n) => n === 160), 'playAudio in 20 ms µ-law payloads');
      t.true(phone.echoed.filter((e) => e.played).length > 5, 'checkpoints answered with playedStream');
    },
    async answerAndConnect(acc, c) {
      const call = c as PlivoCall;
      await fake.ring(call.callUuid);
      const xml = await fake.answer(call.callUuid);
      if (!xml.streamUrl) throw new Error(`answer XML without <Stream>: ${xml.body}`);
      if (xml.streamAttrs.bidirectional !== 'true' || xml.streamAttrs.contentType !== 'audio/x-mulaw;rate=8000') throw new Error(`stream attributes: ${xml.body}`);
      return fake.connect(xml.streamUrl, call);
    },
    async completed(_acc, c, durationS) {
      await fake.finish((c as PlivoCall).callUuid, 'completed', durationS);
    },
    terminal: [['busy', 'busy'], ['no-answer', 'no_answer'], ['timeout', 'no_answer'], ['failed', 'connection_failed']],
    failNextDial: (acc, status, message) => fake.failNextDial((acc as PlivoAccount).authId, status, message),
    clear: true,
    keys: (c) => (c as PlivoCall).digitsSent.join(''),
    amd: {
      requested: (c) => (c as PlivoCall).body.machine_detection === 'true' && typeof (c as PlivoCall).body.machine_detection_url === 'string',
      machine: (c) => fake.amd((c as PlivoCall).callUuid, true),
      hungUp: (c) => fake.requests.some((r) => r.method === 'DELETE' && r.path.endsWith(`/Call/${(c as PlivoCall).callUuid}/`)),
    },
    transferred: (c) => (c as PlivoCall).transfers[0] ?? null,
    recordedTransfer: (c, signing) => fake.recordingCallback((c as PlivoCall).callUuid, { status: 'completed', durationS: 2, signWith: sign(signing) }),
    async finish(_acc, c, raw, signing) {
      const r = await fake.finish((c as PlivoCall).callUuid, raw, 0, sign(signing));
      return { status: r?.status ?? 0 };
    },
    async inbound(acc, to, from, signing) {
      const r = await fake.inbound((acc as PlivoAccount).authId, to, from, sign(signing), fallbackUrl(acc as PlivoAccount));
      return { status: r.status, phone: r.streamUrl ? fake.connect(r.streamUrl, r.call) : null };
    },
    async inboundConcurrent(acc, to, from, n) {
      const r = await fake.inboundConcurrent((acc as PlivoAccount).authId, to, from, n, fallbackUrl(acc as PlivoAccount));
      const first = r.replies.find((x) => x.streamUrl);
      return { statuses: r.replies.map((x) => x.status), answers: r.replies.map((x) => x.streamUrl), phone: first?.streamUrl ? fake.connect(first.streamUrl, r.call) : null };
    },
    async inboundRetried(acc, to, from) {
      const r = await fake.inbound((acc as PlivoAccount).authId, to, from, undefined, fallbackUrl(acc as PlivoAccount));
      const again = await fake.redeliver(r.call);
      return { statuses: [r.status, again.status], answers: [r.streamUrl, again.streamUrl], phone: r.streamUrl ? fake.connect(r.streamUrl, r.call) : null };
    },
  };
}

function telnyxDriver(): CarrierDriver {
  let fake: FakeTelnyx;
  const dials: TelnyxCall[] = [];
  let voiceUrl = '';
  const A = (a: unknown) => a as TelnyxAccount;
  return {
    id: 'telnyx',
    name: 'Telnyx',
    async start() {
      fake = await FakeTelnyx.start();
      fake.on('dial', (c: TelnyxCall) => dials.push(c));
    },
    setBase: (b) => void (voiceUrl = `${b}/telephony/telnyx/voice`),
    close: () => fake.close(),
    env: () => ({ TELNYX_API_BASE_URL: fake.origin }),
    account: () => fake.addAccount(),
    addNumber: (acc, e164) => fake.addNumber(A(acc), e164),
    creds: (acc) => ({ api_key: A(acc).apiKey, public_key: A(acc).publicKey, connection_id: A(acc).connectionId }),
    wrongCreds: (acc) => ({ api_key: 'KEYWRONG', public_key: A(acc).publicKey, connection_id: A(acc).connectionId }),
    secrets: (acc) => [A(acc).apiKey],
    inboundPointsAt(acc, e164, url) {
      const n = A(acc).numbers.find((x) => x.phone_number === e164);
      return n?.connection_id === A(acc).connectionId && A(acc).app.webhook_event_url === url;
    },
    dialCount: () => dials.length,
    dialAt: (i) => dials[i],
    checkDial(t, c, baseUrl, callId) {
      const call = c as TelnyxCall;
      t.like(call.body, {
        from: '+14155550100', to: '+14155550199', webhook_url: `${baseUrl}/telephony/telnyx/status/${callId}`,
        stream_track: 'inbound_track', stream_bidirectional_mode: 'rtp', stream_bidirectional_codec: 'PCMU',
      });
      t.regex(String(call.body.stream_url), new RegExp(`/api/v1/telephony/telnyx/stream/${callId}\\?token=`));
      t.is(call.body.answering_machine_detection, undefined);
    },
    checkMedia(t, phone) {
      t.true(phone.payloadSizes.length > 0 && phone.payloadSizes.every((n) => n === 160), 'media in 20 ms PCMU payloads');
      t.true(phone.echoed.filter((e) => e.played).length > 5, 'marks echoed after playout');
    },
    async answerAndConnect(_acc, c) {
      const call = c as TelnyxCall;
      await fake.answer(call.id);
      return fake.connect(call);
    },
    async completed(_acc, c) {
      const call = c as TelnyxCall;
      if (call.state !== 'hangup') await fake.hangupEvent(call.id, 'normal_clearing');
    },
    failNextDial: (acc, status, message) => fake.failNextDial(A(acc), status, message),
    recorded: (c) => (c as TelnyxCall).body.record === 'record-from-answer',
    failNextBridge: (acc, status) => fake.failNextCommand(A(acc), 'answer', status, 'Call is not in a state to be answered'),
    clear: true,
    keys: (c) => (c as TelnyxCall).commands.filter((x) => x.action === 'send_dtmf').map((x) => String(x.body.digits)).join(''),
    amd: {
      requested: (c) => (c as TelnyxCall).body.answering_machine_detection === 'greeting_end',
      machine: (c) => fake.amd((c as TelnyxCall).id, 'machine'),
      messageEnd: (c) => fake.event(c as TelnyxCall, 'call.machine.greeting.ended', { result: 'beep_detected' }),
      hungUp: (c) => (c as TelnyxCall).commands.some((x) => x.action === 'hangup'),
    },
    transferred: (c) => {
      const x = (c as TelnyxCall).commands.find((y) => y.action === 'transfer');
      return x ? JSON.stringify(x.body) : null;
    },
    recordedInbound: (acc) => {
      const last = [...fake.calls.values()].filter((c) => c.account === A(acc) && c.direction === 'incoming').at(-1);
      return last?.commands.find((x) => x.action === 'answer')?.body.record === 'record-from-answer';
    },
    recordedTransfer: (c, signing) => fake.recordingSaved((c as TelnyxCall).id, { durationS: 2, ...(signing ? { signing } : {}) }),
    terminal: [['user_busy', 'busy'], ['timeout', 'no_answer'], ['unspecified', 'connection_failed'], ['call_rejected', 'rejected'], ['originator_cancel', 'cancelled']],
    async finish(_acc, c, raw, signing) {
      return fake.hangupEvent((c as TelnyxCall).id, raw, signing);
    },
    async inbound(acc, to, from, signing) {
      const r = await fake.inbound(A(acc), to, from, signing, voiceUrl || undefined);
      if (r.status >= 300) return { status: r.status, phone: null };
      // the service answers the call with the stream attached (answer command) or rejects it
      const cmd = await until(() => r.call.commands.find((x) => x.action === 'answer' || x.action === 'reject'), 10_000, 'answer or reject');
      return { status: r.status, phone: cmd.action === 'answer' ? fake.connect(r.call) : null };
    },
    async inboundRetried(acc, to, from) {
      const r = await fake.inbound(A(acc), to, from, undefined, voiceUrl || undefined);
      const answers = () => r.call.commands.filter((x) => x.action === 'answer').map((x) => String(x.body.stream_url));
      await until(() => answers().length >= 1 || r.call.commands.length > 0, 10_000, 'the first answer');
      const again = await fake.redeliver(r.call);
      // the retried call.initiated is answered with the same answer command (or nothing more)
      const seen = answers();
      return { statuses: [r.status, again.status], answers: [seen[0] ?? null, seen[seen.length - 1] ?? null], phone: seen.length ? fake.connect(r.call) : null };
    },
  };
}

function vonageDriver(): CarrierDriver {
  let fake: FakeVonage;
  const dials: VonageCall[] = [];
  let voiceUrl = '';
  const A = (a: unknown) => a as VonageAccount;
  const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const creds = (a: VonageAccount) => ({ api_key: a.apiKey, api_secret: a.apiSecret, application_id: a.applicationId, private_key: a.privateKeyPem, signature_secret: a.signatureSecret });
  return {
    id: 'vonage',
    name: 'Vonage',
    async start() {
      fake = await FakeVonage.start();
      fake.on('dial', (c: VonageCall) => dials.push(c));
    },
    setBase: (b) => void (voiceUrl = `${b}/telephony/vonage/voice`),
    close: () => fake.close(),
    env: () => ({ VONAGE_API_BASE_URL: fake.origin }),
    account: () => fake.addAccount(),
    addNumber: (acc, e164) => fake.addNumber(A(acc), e164),
    creds: (acc) => creds(A(acc)),
    // another key pair: neither the Applications API (secret) nor the Voice API (application JWT) accepts it
    wrongCreds: (acc) => ({ ...creds(A(acc)), api_secret: 'wrong-secret', private_key: otherKey }),
    secrets: (acc) => [A(acc).apiSecret, A(acc).signatureSecret, A(acc).privateKeyPem.split('\n')[2]!],
    inboundPointsAt(acc, e164, url) {
      const a = A(acc);
      const n = a.numbers.find((x) => x.msisdn === e164.replace(/^\+/, ''));
      return n?.appId === a.applicationId && a.app.answerUrl === url && a.app.signed;
    },
    dialCount: () => dials.length,
    dialAt: (i) => dials[i],
    checkDial(t, c, baseUrl, callId) {
      const call = c as VonageCall;
      t.deepEqual(call.body.to, [{ type: 'phone', number: '14155550199' }]);
      t.deepEqual(call.body.from, { type: 'phone', number: '14155550100' });
      t.deepEqual(call.body.event_url, [`${baseUrl}/telephony/vonage/status/${callId}`]);
      const ws = websocketOf(call.ncco);
      t.truthy(ws);
      t.is(ws!.contentType, 'audio/l16;rate=16000');
      t.regex(ws!.uri, new RegExp(`/api/v1/telephony/vonage/stream/${callId}\\?token=`));
      t.is(call.body.advanced_machine_detection, undefined);
    },
    checkMedia(t, phone) {
      t.true(phone.binaryFrames > 0 && phone.payloadSizes.every((n) => n === 640), 'binary 20 ms frames of 16 kHz PCM');
      t.is(phone.received.length, 0, 'no text messages (Vonage has no marks or clear)');
    },
    async answerAndConnect(_acc, c) {
      const call = c as VonageCall;
      await fake.event(call, 'ringing');
      await fake.event(call, 'answered');
      return fake.connect(call);
    },
    async completed(_acc, c) {
      const call = c as VonageCall;
      if (call.status !== 'completed') await fake.event(call, 'completed', { duration: '5' });
    },
    failNextDial: (acc, status, message) => fake.failNextDial(A(acc), status, message),
    recorded: (c) => (c as VonageCall).ncco.some((a: { action?: string }) => a.action === 'record'),
    clear: false,
    keys: (c) => (c as VonageCall).digitsSent.join(''),
    amd: {
      requested: (c) => (c as VonageCall).body.advanced_machine_detection?.mode === 'default',
      machine: (c) => fake.event(c as VonageCall, 'machine'),
      messageEnd: (c) => fake.event(c as VonageCall, 'machine', { sub_state: 'beep_start' }),
      hungUp: (c) => (c as VonageCall).modifications.some((m) => m.action === 'hangup'),
    },
    transferred: (c) => {
      const m = (c as VonageCall).modifications.find((x) => x.action === 'transfer');
      return m ? JSON.stringify(m) : null;
    },
    recordedTransfer: (c, signing) => fake.recordingSaved(c as VonageCall, { durationS: 2, ...(signing ? { signing } : {}) }),
    terminal: [['busy', 'busy'], ['timeout', 'no_answer'], ['unanswered', 'no_answer'], ['failed', 'connection_failed'], ['rejected', 'rejected'], ['cancelled', 'cancelled']],
    async finish(_acc, c, raw, signing) {
      return fake.event(c as VonageCall, raw, {}, signing);
    },
    async inbound(acc, to, from, signing) {
      const r = await fake.inbound(A(acc), to, from, signing, voiceUrl || undefined);
      return { status: r.status, phone: websocketOf(r.ncco) ? fake.connect(r.call) : null };
    },
    async inboundRetried(acc, to, from) {
      const r = await fake.inbound(A(acc), to, from, undefined, voiceUrl || undefined);
      const again = await fake.redeliver(r.call);
      return { statuses: [r.status, again.status], answers: [websocketOf(r.ncco)?.uri ?? null, websocketOf(again.ncco)?.uri ?? null], phone: websocketOf(r.ncco) ? fake.connect(r.call) : null };
    },
  };
}

function exotelDriver(): CarrierDriver {
  let fake: FakeExotel;
  const dials: ExotelCall[] = [];
  let lastVoicebotUrl: string | null = null;
  const A = (a: unknown) => a as ExotelAccount;
  const creds = (a: ExotelAccount) => ({ api_key: a.apiKey, api_token: a.apiToken, account_sid: a.sid, subdomain: 'api.in.exotel.com' });
  return {
    id: 'exotel',
    name: 'Exotel',
    async start() {
      fake = await FakeExotel.start();
      fake.on('dial', (c: ExotelCall) => dials.push(c));
    },
    // before any configuration exists, a Voicebot URL naming no configuration (only the forged-call test uses it)
    setBase: (b) => void (lastVoicebotUrl = `${b}/telephony/exotel/voice?config=0&sig=none`),
    close: () => fake.close(),
    env: () => ({ EXOTEL_API_BASE_URL: fake.origin }),
    account: () => fake.addAccount(),
    addNumber: (acc, e164) => void A(acc).numbers.push(e164),
    creds: (acc) => creds(A(acc)),
    wrongCreds: (acc) => ({ ...creds(A(acc)), api_token: 'wrong-token' }),
    secrets: (acc) => [A(acc).apiToken],
    configured(acc, cfg) {
      // the user pastes the configuration's voicebot_url into the Voicebot applet of the numbers' flow
      A(acc).voicebotUrl = cfg.voicebot_url;
      lastVoicebotUrl = cfg.voicebot_url;
    },
    inboundPointsAt: (acc, _e164, url) => A(acc).voicebotUrl?.startsWith(`${url}?config=`) === true,
    dialCount: () => dials.length,
    dialAt: (i) => dials[i],
    checkDial(t, c, baseUrl, callId) {
      const p = (c as ExotelCall).params;
      t.is(p.get('From'), '+14155550199');
      t.is(p.get('CallerId'), '+14155550100');
      t.is(p.get('StreamType'), 'bidirectional');
      t.true(p.get('StatusCallback')!.startsWith(`${baseUrl}/telephony/exotel/status/${callId}?token=`), 'the status callback carries our signed token');
      t.regex(p.get('StreamUrl')!, new RegExp(`/api/v1/telephony/exotel/stream/${callId}\\?token=`));
    },
    checkMedia(t, phone) {
      t.true(phone.payloadSizes.length > 0 && phone.payloadSizes.every((n) => n === 1600), '100 ms chunks of 16-bit PCM (multiples of 320 bytes)');
      t.true(phone.echoed.some((e) => e.played), 'marks echoed after playout');
    },
    async answerAndConnect(_acc, c) {
      const call = c as ExotelCall;
      await fake.status(call, 'in-progress', 'answered');
      return fake.connect(call);
    },
    async completed(_acc, c, durationS) {
      await fake.status(c as ExotelCall, 'completed', 'terminal', undefined, durationS);
    },
    terminal: [['busy', 'busy'], ['no-answer', 'no_answer'], ['failed', 'connection_failed'], ['canceled', 'cancelled']],
    failNextDial: (acc, status, message) => fake.failNextDial(A(acc), status, message),
    recorded: (c) => (c as ExotelCall).params.get('Record') === 'true',
    clear: true,
    keys: (_c, phone) => detectDtmf(phone.dialect.rate === 8000 ? phone.heardPcm() : resample(phone.heardPcm(), phone.dialect.rate, 8000)),
    amd: null,
    finish: (_acc, c, raw, signing) => fake.status(c as ExotelCall, raw, 'terminal', signing),
    async inbound(acc, to, from, signing) {
      if (!A(acc).voicebotUrl) A(acc).voicebotUrl = lastVoicebotUrl;
      const r = await fake.inbound(A(acc), to, from, signing);
      return { status: r.status, phone: r.url ? fake.connect(r.call) : null };
    },
    async inboundRetried(acc, to, from) {
      if (!A(acc).voicebotUrl) A(acc).voicebotUrl = lastVoicebotUrl;
      const r = await fake.inbound(A(acc), to, from);
      const again = await fake.redeliver(r.call);
      return { statuses: [r.status, again.status], answers: [r.url, again.url], phone: r.url ? fake.connect(r.call) : null };
    },
  };
}

export function carrierDrivers(): CarrierDriver[] {
  const only = process.env.CARRIERS?.split(',');
  return [plivoDriver(), telnyxDriver(), vonageDriver(), exotelDriver()].filter((d) => !only || only.includes(d.id));
}
