// A local fake of Twilio's REST API and webhooks (the REST/callback side; the Media Streams client lives beside it).
// It speaks Twilio's wire format: form-encoded requests under /2010-04-01/Accounts/{AccountSid}/…, HTTP Basic
// AccountSid:AuthToken (401 + code 20003 otherwise), JSON answers, and webhooks signed with X-Twilio-Signature
// (base64 HMAC-SHA1 of the URL + sorted key/value pairs, computed by the twilio SDK, independently of the service's code).
//
// What tests drive: a dialled call waits until the test moves it (`ring`, `answer` — fetches the answer webhook and
// parses its <Connect><Stream> TwiML —, `finish` with busy/no-answer/failed/canceled/completed, `amd`,
// `recordingCallback`), inbound calls (`inbound`: a signed POST to the number's VoiceUrl with Direction=inbound),
// and failures (`failNextDial`). Call updates (hang-up, transfer <Dial> TwiML) are recorded and emitted.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sdkTwilioSignature } from './carrier-sdks.ts';
import { listenFake } from './http-fake.ts';

export interface FakeNumber {
  sid: string;
  phoneNumber: string;
  voiceUrl: string | null;
  voiceMethod: string | null;
  statusCallback: string | null;
}

export interface FakeAccount {
  sid: string;
  token: string;
  status: 'active' | 'suspended';
  numbers: FakeNumber[];
}

export interface FakeCall {
  sid: string;
  accountSid: string;
  to: string;
  from: string;
  direction: 'outbound-api' | 'inbound';
  url: string | null;
  statusCallback: string | null;
  statusEvents: string[];
  timeout: number | null;
  machineDetection: string | null;
  asyncAmdCallback: string | null;
  status: string;
  /** Raw form parameters of the create request. */
  params: URLSearchParams;
  /** TwiML pushed with call updates (transfer), in order. */
  updates: string[];
  sequence: number;
}

export interface ParsedTwiml {
  xml: string;
  stream: { url: string; parameters: Record<string, string> } | null;
  say: string | null;
  hangup: boolean;
  dial: { number: string | null; sip: string | null; attrs: Record<string, string> } | null;
  /** `<Reject reason="…">`: the call is refused unanswered */
  reject: { reason: string } | null;
}

export interface WebhookResult {
  status: number;
  body: string;
}

const sidOf = (prefix: string) => `${prefix}${randomBytes(16).toString('hex')}`;

/** Twilio's signature, computed by the twilio SDK (getExpectedTwilioSignature). */
export function signTwilio(token: string, url: string, params: Record<string, string>): string {
  return sdkTwilioSignature(token, url, params);
}

const unescapeXml = (s: string) => s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

function attrsOf(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([A-Za-z]+)="([^"]*)"/g)) out[m[1]!] = unescapeXml(m[2]!);
  return out;
}

export function parseTwiml(xml: string): ParsedTwiml {
  const streamTag = /<Stream\b([^>]*?)\/?>/.exec(xml);
  let stream: ParsedTwiml['stream'] = null;
  if (streamTag && /<Connect\b/.test(xml)) {
    const parameters: Record<string, string> = {};
    for (const p of xml.matchAll(/<Parameter\b([^>]*?)\/>/g)) {
      const a = attrsOf(p[1]!);
      if (a.name !== undefined) parameters[a.name] = a.value ?? '';
    }
    stream = { url: attrsOf(streamTag[1]!).url ?? '', parameters };
  }
  const say = /<Say\b[^>]*>([\s\S]*?)<\/Say>/.exec(xml);
  const dialTag = /<Dial\b([^>]*)>([\s\S]*?)<\/Dial>/.exec(xml);
  let dial: ParsedTwiml['dial'] = null;
  if (dialTag) {
    const num = /<Number\b[^>]*>([\s\S]*?)<\/Number>/.exec(dialTag[2]!);
    const sip = /<Sip\b[^>]*>([\s\S]*?)<\/Sip>/.exec(dialTag[2]!);
    dial = { number: num ? unescapeXml(num[1]!) : null, sip: sip ? unescapeXml(sip[1]!) : null, attrs: attrsOf(dialTag[1]!) };
  }
  const reject = /<Reject\b([^>]*?)\/?>/.exec(xml);
  return { xml, stream, say: say ? unescapeXml(say[1]!) : null, hangup: /<Hangup\s*\/>/.test(xml), dial, reject: reject ? { reason: attrsOf(reject[1]!).reason ?? 'rejected' } : null };
}

/** A tiny valid WAV (8 kHz mono s16le, `ms` of silence) for recording downloads. */
export function silentWav(ms = 1000): Buffer {
  const samples = Math.round((8000 * ms) / 1000);
  const data = Buffer.alloc(samples * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(16000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

export class FakeTwilio extends EventEmitter {
  readonly accounts = new Map<string, FakeAccount>();
  readonly calls = new Map<string, FakeCall>();
  readonly recordings = new Map<string, { accountSid: string; wav: Buffer }>();
  /** Every REST request: method, path, form params (auth header reduced to whether it was valid). */
  readonly requests: Array<{ method: string; path: string; params: URLSearchParams; authorized: boolean }> = [];
  private dialFailures = new Map<string, Array<{ status: number; code: number; message: string }>>();
  private server: { port: number; close(): Promise<void> } | null = null;
  origin = '';
  /** A reverse proxy in front of the service: maps the public URL Twilio requests (and signs) to where it is delivered. */
  proxy: ((url: string) => string) | null = null;

  static async start(): Promise<FakeTwilio> {
    const fake = new FakeTwilio();
    fake.server = await listenFake((req, res) => fake.handle(req, res));
    fake.origin = `http://127.0.0.1:${fake.server.port}`;
    return fake;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  addAccount(o: { sid?: string; token?: string; status?: 'active' | 'suspended' } = {}): FakeAccount {
    const acc: FakeAccount = { sid: o.sid ?? sidOf('AC'), token: o.token ?? randomBytes(16).toString('hex'), status: o.status ?? 'active', numbers: [] };
    this.accounts.set(acc.sid, acc);
    return acc;
  }

  addNumber(accountSid: string, phoneNumber: string): FakeNumber {
    const n: FakeNumber = { sid: sidOf('PN'), phoneNumber, voiceUrl: null, voiceMethod: null, statusCallback: null };
    this.accounts.get(accountSid)!.numbers.push(n);
    return n;
  }

  /** The account's next Calls.json create answers this error instead of 201. */
  failNextDial(accountSid: string, status: number, code: number, message: string): void {
    const list = this.dialFailures.get(accountSid) ?? [];
    list.push({ status, code, message });
    this.dialFailures.set(accountSid, list);
  }

  // ── REST ──────────────────────────────────────────────────────────────────────────────────────────────────
  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private error(res: ServerResponse, status: number, code: number, message: string): void {
    this.json(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
  }

  private authorize(req: IncomingMessage, sid: string): FakeAccount | null {
    const acc = this.accounts.get(sid);
    const h = req.headers.authorization ?? '';
    if (!acc || !h.startsWith('Basic ')) return null;
    const [user, pass] = Buffer.from(h.slice(6), 'base64').toString('utf8').split(':');
    return user === acc.sid && pass === acc.token ? acc : null;
  }

  private callJson(c: FakeCall) {
    return { sid: c.sid, account_sid: c.accountSid, to: c.to, from: c.from, status: c.status, direction: c.direction, uri: `/2010-04-01/Accounts/${c.accountSid}/Calls/${c.sid}.json` };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const url = new URL(req.url ?? '/', this.origin);
    const params = new URLSearchParams(req.method === 'GET' ? url.search : raw);
    const m = /^\/2010-04-01\/Accounts\/([^/.]+)(\.json|\/.*)?$/.exec(url.pathname);
    if (!m) return this.error(res, 404, 20404, 'The requested resource was not found');
    const acc = this.authorize(req, decodeURIComponent(m[1]!));
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, params, authorized: acc !== null });
    if (!acc) return this.error(res, 401, 20003, 'Authenticate');
    const rest = m[2] ?? '';

    if (rest === '.json' && req.method === 'GET') {
      return this.json(res, 200, { sid: acc.sid, friendly_name: 'fake account', status: acc.status, type: 'Full' });
    }
    if (rest === '/IncomingPhoneNumbers.json' && req.method === 'GET') {
      const want = url.searchParams.get('PhoneNumber');
      const list = acc.numbers.filter((n) => !want || n.phoneNumber === want);
      return this.json(res, 200, {
        incoming_phone_numbers: list.map((n) => ({ sid: n.sid, phone_number: n.phoneNumber, voice_url: n.voiceUrl, voice_method: n.voiceMethod, status_callback: n.statusCallback })),
      });
    }
    const pn = /^\/IncomingPhoneNumbers\/([^/]+)\.json$/.exec(rest);
    if (pn && req.method === 'POST') {
      const n = acc.numbers.find((x) => x.sid === pn[1]);
      if (!n) return this.error(res, 404, 20404, 'The requested resource was not found');
      if (params.has('VoiceUrl')) n.voiceUrl = params.get('VoiceUrl');
      if (params.has('VoiceMethod')) n.voiceMethod = params.get('VoiceMethod');
      if (params.has('StatusCallback')) n.statusCallback = params.get('StatusCallback');
      this.emit('number-updated', n);
      return this.json(res, 200, { sid: n.sid, phone_number: n.phoneNumber, voice_url: n.voiceUrl, voice_method: n.voiceMethod, status_callback: n.statusCallback });
    }
    if (rest === '/Calls.json' && req.method === 'POST') {
      const failure = this.dialFailures.get(acc.sid)?.shift();
      if (failure) return this.error(res, failure.status, failure.code, failure.message);
      const to = params.get('To');
      const from = params.get('From');
      if (!to || !from) return this.error(res, 400, 21201, "No 'To' number is specified");
      if (!params.get('Url') && !params.get('Twiml')) return this.error(res, 400, 21205, 'Url parameter is required');
      const call: FakeCall = {
        sid: sidOf('CA'), accountSid: acc.sid, to, from, direction: 'outbound-api', url: params.get('Url'),
        statusCallback: params.get('StatusCallback'), statusEvents: params.getAll('StatusCallbackEvent'),
        timeout: params.has('Timeout') ? Number(params.get('Timeout')) : null,
        machineDetection: params.get('MachineDetection'), asyncAmdCallback: params.get('AsyncAmdStatusCallback'),
        status: 'queued', params, updates: [], sequence: 0,
      };
      this.calls.set(call.sid, call);
      this.json(res, 201, this.callJson(call));
      this.emit('dial', call);
      if (call.statusEvents.includes('initiated')) void this.statusCallback(call, 'initiated').catch(() => undefined);
      return;
    }
    const cu = /^\/Calls\/([^/]+)\.json$/.exec(rest);
    if (cu && req.method === 'POST') {
      const call = this.calls.get(cu[1]!);
      if (!call || call.accountSid !== acc.sid) return this.error(res, 404, 20404, 'The requested resource was not found');
      if (['completed', 'busy', 'failed', 'no-answer', 'canceled'].includes(call.status)) {
        return this.error(res, 400, 21220, 'Call is not in-progress. Cannot redirect.');
      }
      if (params.has('Twiml')) {
        call.updates.push(params.get('Twiml')!);
        this.json(res, 200, this.callJson(call));
        this.emit('update', call, parseTwiml(params.get('Twiml')!));
        return;
      }
      if (params.get('Status') === 'completed' || params.get('Status') === 'canceled') {
        this.json(res, 200, this.callJson(call));
        this.emit('hangup', call);
        void this.finish(call.sid, call.status === 'in-progress' ? 'completed' : 'canceled').catch(() => undefined);
        return;
      }
      return this.json(res, 200, this.callJson(call));
    }
    const live = /^\/Calls\/([^/]+)\/Recordings\.json$/.exec(rest);
    if (live && req.method === 'POST') {
      const call = this.calls.get(live[1]!);
      if (!call || call.accountSid !== acc.sid) return this.error(res, 404, 20404, 'The requested resource was not found');
      if (call.status !== 'in-progress') return this.error(res, 400, 21220, 'Requested resource is not eligible for recording');
      const recSid = `RE${randomBytes(16).toString('hex')}`;
      return this.json(res, 201, { sid: recSid, call_sid: call.sid, account_sid: acc.sid, status: 'in-progress', channels: Number(params.get('RecordingChannels') === 'dual' ? 2 : 1), source: 'StartCallRecordingAPI' });
    }
    const rec = /^\/Recordings\/([^/.]+)(\.wav|\.mp3)?$/.exec(rest);
    if (rec && req.method === 'GET') {
      const r = this.recordings.get(rec[1]!);
      if (!r || r.accountSid !== acc.sid) return this.error(res, 404, 20404, 'The requested resource was not found');
      res.writeHead(200, { 'content-type': 'audio/x-wav', 'content-length': String(r.wav.length) });
      res.end(r.wav);
      return;
    }
    return this.error(res, 404, 20404, 'The requested resource was not found');
  }

  // ── webhooks (Twilio → service) ─────────────────────────────────────────────────────────────────────────
  /** POST a signed form to the service (signature with the account's token unless `signWith` says otherwise). */
  async webhook(accountSid: string, url: string, params: Record<string, string>, signWith?: string | null): Promise<WebhookResult> {
    const acc = this.accounts.get(accountSid)!;
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'TwilioProxy/1.1' };
    const token = signWith === undefined ? acc.token : signWith;
    if (token !== null) headers['x-twilio-signature'] = signTwilio(token, url, params);
    const res = await fetch(this.proxy ? this.proxy(url) : url, { method: 'POST', headers, body: new URLSearchParams(params).toString() });
    return { status: res.status, body: await res.text() };
  }

  private baseParams(call: FakeCall): Record<string, string> {
    return {
      AccountSid: call.accountSid, CallSid: call.sid, From: call.from, To: call.to, Caller: call.from, Called: call.to,
      Direction: call.direction, ApiVersion: '2010-04-01',
    };
  }

  async statusCallback(call: FakeCall, status: string, extra: Record<string, string> = {}, signWith?: string | null): Promise<WebhookResult | null> {
    call.status = status === 'initiated' ? 'queued' : status === 'answered' ? 'in-progress' : status;
    const url = call.direction === 'inbound' ? this.numberFor(call)?.statusCallback : call.statusCallback;
    if (!url) return null;
    call.sequence += 1;
    return this.webhook(call.accountSid, url, {
      ...this.baseParams(call), CallStatus: call.status, CallbackSource: 'call-progress-events', SequenceNumber: String(call.sequence),
      Timestamp: new Date().toUTCString(), ...extra,
    }, signWith);
  }

  private numberFor(call: FakeCall): FakeNumber | undefined {
    return this.accounts.get(call.accountSid)?.numbers.find((n) => n.phoneNumber === call.to);
  }

  /** ringing callback. */
  async ring(sid: string): Promise<WebhookResult | null> {
    const call = this.calls.get(sid)!;
    return call.statusEvents.includes('ringing') ? this.statusCallback(call, 'ringing') : ((call.status = 'ringing'), null);
  }

  /** The callee picks up: fetch the answer webhook (signed) and parse its TwiML; `answered` status callback. */
  async answer(sid: string): Promise<ParsedTwiml & { status: number }> {
    const call = this.calls.get(sid)!;
    call.status = 'in-progress';
    const r = await this.webhook(call.accountSid, call.url!, { ...this.baseParams(call), CallStatus: 'in-progress' });
    if (call.statusEvents.includes('answered')) await this.statusCallback(call, 'in-progress');
    return { ...parseTwiml(r.body), status: r.status };
  }

  /** A terminal status: busy, no-answer, failed, canceled or completed (with CallDuration). */
  async finish(sid: string, status: 'busy' | 'no-answer' | 'failed' | 'canceled' | 'completed', durationS = 0, signWith?: string | null): Promise<WebhookResult | null> {
    const call = this.calls.get(sid)!;
    const extra: Record<string, string> = { CallDuration: String(durationS), Duration: String(Math.ceil(durationS / 60)) };
    if (status === 'no-answer' || status === 'busy' || status === 'failed' || status === 'canceled') extra.CallDuration = '0';
    return this.statusCallback(call, status, extra, signWith);
  }

  /** AsyncAmd result. */
  async amd(sid: string, answeredBy: string): Promise<WebhookResult> {
    const call = this.calls.get(sid)!;
    return this.webhook(call.accountSid, call.asyncAmdCallback!, {
      AccountSid: call.accountSid, CallSid: call.sid, AnsweredBy: answeredBy, MachineDetectionDuration: '2100',
    });
  }

  /** The recording status callback of a transfer <Dial> (the URL comes from the pushed TwiML). */
  async recordingCallback(sid: string, o: { status: 'completed' | 'absent' | 'failed'; durationS?: number; wav?: Buffer }): Promise<WebhookResult> {
    const call = this.calls.get(sid)!;
    const twiml = parseTwiml(call.updates[call.updates.length - 1] ?? '');
    const url = twiml.dial?.attrs.recordingStatusCallback;
    if (!url) throw new Error('the last call update carried no recordingStatusCallback');
    const recSid = sidOf('RE');
    if (o.status === 'completed') this.recordings.set(recSid, { accountSid: call.accountSid, wav: o.wav ?? silentWav(1000) });
    return this.webhook(call.accountSid, url, {
      AccountSid: call.accountSid, CallSid: call.sid, RecordingSid: recSid,
      RecordingUrl: `${this.origin}/2010-04-01/Accounts/${call.accountSid}/Recordings/${recSid}`,
      RecordingStatus: o.status, RecordingDuration: String(o.durationS ?? (o.status === 'completed' ? 1 : 0)), RecordingChannels: '2',
      RecordingSource: 'DialVerb', RecordingStartTime: new Date().toUTCString(),
    });
  }

  /** An inbound call to one of the account's numbers: signed POST to its VoiceUrl with Direction=inbound. */
  async inbound(accountSid: string, to: string, from: string, signWith?: string | null): Promise<{ call: FakeCall; twiml: ParsedTwiml; status: number }> {
    const acc = this.accounts.get(accountSid)!;
    const n = acc.numbers.find((x) => x.phoneNumber === to);
    if (!n?.voiceUrl) throw new Error(`${to} has no VoiceUrl`);
    const call: FakeCall = {
      sid: sidOf('CA'), accountSid, to, from, direction: 'inbound', url: n.voiceUrl, statusCallback: n.statusCallback,
      statusEvents: ['completed'], timeout: null, machineDetection: null, asyncAmdCallback: null, status: 'ringing',
      params: new URLSearchParams(), updates: [], sequence: 0,
    };
    this.calls.set(call.sid, call);
    const r = await this.webhook(accountSid, n.voiceUrl, { ...this.baseParams(call), CallStatus: 'ringing' }, signWith);
    const twiml = parseTwiml(r.body);
    if (twiml.stream) call.status = 'in-progress';
    else if (twiml.hangup) call.status = 'completed';
    // <Reject>: never answered; the caller hears busy (reason busy) or the not-in-service tone, the call ends so
    else if (twiml.reject) call.status = twiml.reject.reason === 'busy' ? 'busy' : 'no-answer';
    return { call, twiml, status: r.status };
  }
}
