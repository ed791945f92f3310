// A local fake of Plivo (REST, callbacks and the Audio Stream WebSocket), speaking Plivo's wire format:
// JSON requests under /v1/Account/{auth_id}/… with HTTP Basic auth_id:auth_token (401 otherwise), `POST /Call/`
// → 201 {message: "call fired", request_uuid}; callbacks (answer_url, ring/hangup_url, machine_detection_url, an
// Application's answer_url for inbound calls, a transfer's aleg_url) as form posts signed with
// X-Plivo-Signature-V3 + nonce (computed here independently of the service and checked by the plivo SDK); the stream dialect of
// media/transports/carriers/plivo.ts (start{callId, streamId}, media, dtmf, playAudio, checkpoint → playedStream,
// clearAudio → clearedAudio; the socket just closes at the end).
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakePhoneStream, type PhoneDialect } from './carrier-phone.ts';
import { sdkMustAccept, sdkPlivoAccepts } from './carrier-sdks.ts';
import { fakeMp3, listenFake } from './http-fake.ts';

export interface PlivoAccount {
  authId: string;
  token: string;
  numbers: Map<string, { number: string; appId: string | null }>;
  apps: Map<string, { answerUrl: string | null; hangupUrl: string | null; name: string; defaultApp?: boolean }>;
}

export interface PlivoCall {
  requestUuid: string;
  callUuid: string;
  authId: string;
  from: string;
  to: string;
  direction: 'outbound' | 'inbound';
  body: Record<string, unknown>;
  status: string;
  /** XML fetched from aleg_url by a transfer */
  transfers: string[];
  /** digits of Send Digits requests, in order */
  digitsSent: string[];
  /** the inbound answer_url request (redelivered as Plivo retries an answer_url that failed or timed out) */
  answerHook?: { url: string; params: Record<string, string> };
}

export interface PlivoReply {
  status: number;
  body: string;
  /** the <Stream> URL of an answer XML */
  streamUrl: string | null;
  streamAttrs: Record<string, string>;
  speak: string | null;
  hangup: boolean;
}

/**
 * Plivo's V3 signature of a form POST, computed independently of the service: the URL before its query, `?` + sorted
 * decoded query, `.` when both exist, sorted POST fields as key+value (no separator), `.` + nonce. Every signature
 * is checked by the plivo SDK's validateV3Signature before use (`sdkMustAccept`), so it is one Plivo's own code accepts.
 */
export function signPlivoV3(token: string, url: string, params: Record<string, string>, nonce: string): string {
  const cut = url.indexOf('?');
  const q = [...new URLSearchParams(cut < 0 ? '' : url.slice(cut + 1)).entries()]
    .sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : x > y ? 1 : 0) : a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join('&');
  const keys = Object.keys(params).sort();
  let s = cut < 0 ? url : url.slice(0, cut);
  if (q || keys.length) s += `?${q}`;
  if (q && keys.length) s += '.';
  for (const k of keys) s += `${k}${params[k]}`;
  const sig = createHmac('sha256', token).update(`${s}.${nonce}`).digest('base64');
  sdkMustAccept(sdkPlivoAccepts('POST', url, nonce, token, sig, params), 'X-Plivo-Signature-V3');
  return sig;
}

const unescapeXml = (s: string) => s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

export function parsePlivoXml(status: number, body: string): PlivoReply {
  const stream = /<Stream\b([^>]*)>([^<]*)<\/Stream>/.exec(body);
  const attrs: Record<string, string> = {};
  for (const m of (stream?.[1] ?? '').matchAll(/([A-Za-z]+)="([^"]*)"/g)) attrs[m[1]!] = unescapeXml(m[2]!);
  const speak = /<Speak\b[^>]*>([\s\S]*?)<\/Speak>/.exec(body);
  return { status, body, streamUrl: stream ? unescapeXml(stream[2]!.trim()) : null, streamAttrs: attrs, speak: speak ? unescapeXml(speak[1]!) : null, hangup: /<Hangup\s*\/>/.test(body) };
}

/** The Plivo Audio Stream dialect of the phone side. */
export function plivoDialect(call: { callUuid: string; authId: string }): PhoneDialect {
  const streamId = randomUUID();
  return {
    codec: 'mulaw',
    rate: 8000,
    callerMs: 20,
    hello: () => [JSON.stringify({
      event: 'start', sequenceNumber: 0,
      start: { callId: call.callUuid, streamId, accountId: call.authId, tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } },
      extra_headers: '{}',
    })],
    media: (bytes, chunk, ts) => JSON.stringify({
      event: 'media', sequenceNumber: chunk, streamId,
      media: { track: 'inbound', timestamp: String(ts), chunk, payload: Buffer.from(bytes).toString('base64') },
      extra_headers: '{}',
    }),
    dtmf: (digit) => JSON.stringify({ event: 'dtmf', streamId, dtmf: { track: 'inbound', digit, timestamp: Date.now() } }),
    markEcho: (name) => JSON.stringify({ event: 'playedStream', sequenceNumber: 0, streamId, name }),
    clearEcho: () => JSON.stringify({ event: 'clearedAudio', sequenceNumber: 0, streamId }),
    stop: () => null,
    parse(data, isBinary) {
      if (isBinary) return { kind: 'other' };
      const m = JSON.parse(data.toString('utf8')) as Record<string, any>;
      if (m.event === 'playAudio' && m.media?.contentType === 'audio/x-mulaw' && m.media?.sampleRate === 8000) {
        return { kind: 'audio', bytes: new Uint8Array(Buffer.from(String(m.media.payload), 'base64')) };
      }
      if (m.event === 'checkpoint' && m.streamId === streamId) return { kind: 'mark', name: String(m.name) };
      if (m.event === 'clearAudio' && m.streamId === streamId) return { kind: 'clear' };
      return { kind: 'other' };
    },
  };
}

const digits = (n: string) => n.replace(/^\+/, '');

export class FakePlivo extends EventEmitter {
  readonly accounts = new Map<string, PlivoAccount>();
  readonly calls = new Map<string, PlivoCall>();
  readonly requests: Array<{ method: string; path: string; body: unknown; authorized: boolean }> = [];
  /** Recordings made by <Record> (served at /v1/Account/{auth_id}/Recording/{id}.mp3 to the account's Basic auth). */
  readonly recordings = new Map<string, { authId: string; audio: Buffer }>();
  private failures = new Map<string, Array<{ status: number; error: string }>>();
  private server: { port: number; close(): Promise<void> } | null = null;
  origin = '';

  static async start(): Promise<FakePlivo> {
    const f = new FakePlivo();
    f.server = await listenFake((req, res) => f.handle(req, res));
    f.origin = `http://127.0.0.1:${f.server.port}`;
    return f;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  /** An account; like a Plivo account set up in its console, it has a default application unless `defaultApp: false`. */
  addAccount(o: { defaultApp?: boolean } = {}): PlivoAccount {
    const acc: PlivoAccount = { authId: `MA${randomBytes(9).toString('hex').toUpperCase()}`, token: randomBytes(20).toString('hex'), numbers: new Map(), apps: new Map() };
    if (o.defaultApp !== false) acc.apps.set(String(Math.floor(Math.random() * 1e17)), { name: 'Default App', answerUrl: null, hangupUrl: null, defaultApp: true });
    this.accounts.set(acc.authId, acc);
    return acc;
  }

  addNumber(authId: string, e164: string): void {
    this.accounts.get(authId)!.numbers.set(digits(e164), { number: digits(e164), appId: null });
  }

  failNextDial(authId: string, status: number, error: string): void {
    this.failures.set(authId, [...(this.failures.get(authId) ?? []), { status, error }]);
  }

  private json(res: ServerResponse, status: number, body?: unknown): void {
    res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const url = new URL(req.url ?? '/', this.origin);
    let body: Record<string, any> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, any>) : {};
    } catch {
      return this.json(res, 400, { error: 'invalid JSON' });
    }
    const m = /^\/v1\/Account\/([^/]+)\/(.*)$/.exec(url.pathname);
    const acc = m ? this.accounts.get(decodeURIComponent(m[1]!)) : undefined;
    const h = req.headers.authorization ?? '';
    const [user, pass] = h.startsWith('Basic ') ? Buffer.from(h.slice(6), 'base64').toString().split(':') : [];
    const ok = !!acc && user === acc.authId && pass === acc.token;
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, body, authorized: ok });
    if (!m) return this.json(res, 404, { error: 'not found' });
    if (!ok || !acc) return this.json(res, 401, { error: 'Authentication credentials invalid' });
    const rest = m[2]!;
    const api_id = randomUUID();
    if (rest === '' && req.method === 'GET') return this.json(res, 200, { api_id, auth_id: acc.authId, account_type: 'standard', cash_credits: '10.0' });
    const recording = /^Recording\/([^/]+)\.mp3$/.exec(rest);
    if (recording && req.method === 'GET') {
      const r = this.recordings.get(recording[1]!);
      if (!r || r.authId !== acc.authId) return this.json(res, 404, { api_id, error: 'not found' });
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(r.audio.length) }).end(r.audio);
      return;
    }
    const num = /^Number\/([^/]+)\/$/.exec(rest);
    if (num && req.method === 'GET') {
      const n = acc.numbers.get(decodeURIComponent(num[1]!));
      return n ? this.json(res, 200, { api_id, number: n.number, application: n.appId ? `/v1/Account/${acc.authId}/Application/${n.appId}/` : null, voice_enabled: true })
        : this.json(res, 404, { api_id, error: 'not found' });
    }
    if (num && req.method === 'POST') {
      const n = acc.numbers.get(decodeURIComponent(num[1]!));
      if (!n) return this.json(res, 404, { api_id, error: 'not found' });
      if (body.app_id !== undefined && !acc.apps.has(String(body.app_id))) return this.json(res, 400, { api_id, error: 'invalid app_id' });
      n.appId = body.app_id === undefined ? n.appId : String(body.app_id);
      this.emit('number-updated', n);
      return this.json(res, 202, { api_id, message: 'changed' });
    }
    if (rest === 'Application/' && req.method === 'GET') {
      const limit = Number(url.searchParams.get('limit') ?? 20);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const all = [...acc.apps.entries()].map(([id, a]) => ({ app_id: id, app_name: a.name, answer_url: a.answerUrl, hangup_url: a.hangupUrl, default_app: a.defaultApp === true }));
      const objects = all.slice(offset, offset + limit);
      return this.json(res, 200, { api_id, meta: { limit, offset, total_count: all.length, next: offset + limit < all.length ? `/v1/Account/${acc.authId}/Application/?limit=${limit}&offset=${offset + limit}` : null, previous: null }, objects });
    }
    if (rest === 'Application/' && req.method === 'POST') {
      if (!body.app_name) return this.json(res, 400, { api_id, error: 'app_name is required' });
      const appId = String(Math.floor(Math.random() * 1e17));
      acc.apps.set(appId, { name: String(body.app_name), answerUrl: body.answer_url ?? null, hangupUrl: body.hangup_url ?? null });
      return this.json(res, 201, { api_id, app_id: appId, message: 'created' });
    }
    const app = /^Application\/([^/]+)\/$/.exec(rest);
    if (app && req.method === 'POST') {
      const a = acc.apps.get(app[1]!);
      if (!a) return this.json(res, 404, { api_id, error: 'not found' });
      if (body.answer_url !== undefined) a.answerUrl = body.answer_url;
      if (body.hangup_url !== undefined) a.hangupUrl = body.hangup_url;
      return this.json(res, 202, { api_id, message: 'changed' });
    }
    if (rest === 'Call/' && req.method === 'POST') {
      const failure = this.failures.get(acc.authId)?.shift();
      if (failure) return this.json(res, failure.status, { api_id, error: failure.error });
      if (!body.from || !body.to || !body.answer_url) return this.json(res, 400, { api_id, error: 'from, to and answer_url are required' });
      const call: PlivoCall = {
        requestUuid: randomUUID(), callUuid: randomUUID(), authId: acc.authId, from: String(body.from), to: String(body.to),
        direction: 'outbound', body, status: 'queued', transfers: [], digitsSent: [],
      };
      this.calls.set(call.callUuid, call);
      this.json(res, 201, { api_id, message: 'call fired', request_uuid: call.requestUuid });
      this.emit('dial', call);
      return;
    }
    // Send Digits: POST Call/{uuid}/DTMF/ {digits, leg}
    const dt = /^Call\/([^/]+)\/DTMF\/$/.exec(rest);
    if (dt && req.method === 'POST') {
      const c = this.calls.get(dt[1]!);
      if (!c || c.authId !== acc.authId || c.status !== 'in-progress') return this.json(res, 404, { api_id, error: 'call not found' });
      if (typeof body.digits !== 'string' || !/^[0-9*#]+$/.test(body.digits)) return this.json(res, 400, { api_id, error: 'invalid digits' });
      c.digitsSent.push(String(body.digits));
      this.json(res, 202, { api_id, message: 'digits sent' });
      return;
    }
    const cu = /^Call\/([^/]+)\/$/.exec(rest);
    const call = cu ? this.calls.get(cu[1]!) : undefined;
    if (cu && (!call || call.authId !== acc.authId)) return this.json(res, 404, { api_id, error: 'not found' });
    if (call && req.method === 'DELETE') {
      this.json(res, 204);
      this.emit('hangup', call);
      void this.finish(call.callUuid, call.status === 'in-progress' ? 'completed' : 'cancel').catch(() => undefined);
      return;
    }
    if (call && req.method === 'POST') {
      if (body.legs !== 'aleg' || !body.aleg_url) return this.json(res, 400, { api_id, error: 'legs and aleg_url are required' });
      this.json(res, 202, { api_id, message: 'call transferred' });
      const r = await this.webhook(acc.authId, String(body.aleg_url), this.params(call, { CallStatus: 'in-progress' }));
      call.transfers.push(r.body);
      this.emit('transfer', call, r.body);
      return;
    }
    return this.json(res, 404, { api_id, error: 'not found' });
  }

  // ── callbacks (Plivo → service) ─────────────────────────────────────────────────────────────────────────
  /** A form POST signed with X-Plivo-Signature-V3 (the account's token unless `signWith` says otherwise; null: unsigned). */
  async webhook(authId: string, url: string, params: Record<string, string>, signWith?: string | null): Promise<{ status: number; body: string }> {
    const acc = this.accounts.get(authId)!;
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'PlivoHTTP/1.0' };
    const token = signWith === undefined ? acc.token : signWith;
    if (token !== null) {
      const nonce = String(Math.floor(Math.random() * 1e20));
      headers['x-plivo-signature-v3'] = signPlivoV3(token, url, params, nonce);
      headers['x-plivo-signature-v3-nonce'] = nonce;
    }
    const res = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(params).toString() });
    return { status: res.status, body: await res.text() };
  }

  private params(call: PlivoCall, extra: Record<string, string>): Record<string, string> {
    return { CallUUID: call.callUuid, RequestUUID: call.requestUuid, From: call.from, To: call.to, Direction: call.direction, Event: 'StartApp', ...extra };
  }

  async ring(callUuid: string): Promise<{ status: number } | null> {
    const call = this.calls.get(callUuid)!;
    call.status = 'ringing';
    const url = call.body.ring_url as string | undefined;
    return url ? this.webhook(call.authId, url, this.params(call, { CallStatus: 'ringing', Event: 'Ring' })) : null;
  }

  /**
   * The transferred legs were recorded by the <Record startOnDialAnswer> of the transfer's XML: Plivo posts the file's
   * RecordUrl to the element's callbackUrl (signed like every callback). `absent`: a callback without a file.
   */
  async recordingCallback(callUuid: string, o: { status: 'completed' | 'absent'; durationS?: number; signWith?: string | null }): Promise<{ status: number; body: string }> {
    const call = this.calls.get(callUuid)!;
    const xml = call.transfers.at(-1) ?? '';
    const rec = /<Record\b([^>]*)\/?>/.exec(xml);
    const url = rec ? /\bcallbackUrl="([^"]*)"/.exec(rec[1]!)?.[1]?.replace(/&amp;/g, '&') : undefined;
    if (!url || !/\bstartOnDialAnswer="true"/.test(rec![1]!)) throw new Error(`the transfer XML records nothing: ${xml}`);
    const id = randomUUID();
    const params: Record<string, string> = { CallUUID: call.callUuid, RecordingID: id };
    if (o.status === 'completed') {
      this.recordings.set(id, { authId: call.authId, audio: fakeMp3() });
      const ms = Math.round((o.durationS ?? 1) * 1000);
      Object.assign(params, { RecordUrl: `${this.origin}/v1/Account/${call.authId}/Recording/${id}.mp3`, RecordingDuration: String(Math.round(ms / 1000)), RecordingDurationMs: String(ms), RecordingStartMs: String(Date.now() - ms), RecordingEndMs: String(Date.now()) });
    }
    return this.webhook(call.authId, url, params, o.signWith);
  }

  /** The callee picks up: the answer_url is fetched and its XML parsed. */
  async answer(callUuid: string): Promise<PlivoReply> {
    const call = this.calls.get(callUuid)!;
    call.status = 'in-progress';
    const r = await this.webhook(call.authId, String(call.body.answer_url), this.params(call, { CallStatus: 'in-progress' }));
    return parsePlivoXml(r.status, r.body);
  }

  /** The call ends with `status` (completed, busy, failed, timeout, no-answer, cancel): the hangup_url is called. */
  async finish(callUuid: string, status: string, durationS = 0, signWith?: string | null): Promise<{ status: number; body: string } | null> {
    const call = this.calls.get(callUuid)!;
    call.status = status;
    const url = call.direction === 'inbound' ? this.appOf(call)?.hangupUrl : (call.body.hangup_url as string | undefined);
    if (!url) return null;
    const cause = { busy: 'USER_BUSY', 'no-answer': 'NO_ANSWER', timeout: 'NO_ANSWER', failed: 'CALL_REJECTED', cancel: 'ORIGINATOR_CANCEL' }[status] ?? 'NORMAL_CLEARING';
    return this.webhook(call.authId, url, this.params(call, { CallStatus: status, Duration: String(durationS), BillDuration: String(durationS), HangupCause: cause, Event: 'Hangup' }), signWith);
  }

  async amd(callUuid: string, machine: boolean): Promise<{ status: number }> {
    const call = this.calls.get(callUuid)!;
    return this.webhook(call.authId, String(call.body.machine_detection_url), this.params(call, { Machine: machine ? 'true' : 'false', Event: 'MachineDetection' }));
  }

  private appOf(call: PlivoCall) {
    const acc = this.accounts.get(call.authId)!;
    const n = acc.numbers.get(digits(call.to));
    return n?.appId ? acc.apps.get(n.appId) : undefined;
  }

  /** A caller dials one of the account's numbers: the linked Application's answer_url is fetched. */
  async inbound(authId: string, to: string, from: string, signWith?: string | null, fallbackUrl?: string): Promise<PlivoReply & { call: PlivoCall }> {
    const call: PlivoCall = { requestUuid: randomUUID(), callUuid: randomUUID(), authId, from: digits(from), to: digits(to), direction: 'inbound', body: {}, status: 'in-progress', transfers: [], digitsSent: [] };
    this.calls.set(call.callUuid, call);
    const url = this.appOf(call)?.answerUrl ?? fallbackUrl;
    if (!url) throw new Error(`number ${to} has no application answer_url`);
    call.answerHook = { url, params: this.params(call, { CallStatus: 'ringing' }) };
    const r = await this.webhook(authId, url, call.answerHook.params, signWith);
    return { ...parsePlivoXml(r.status, r.body), call };
  }

  /** The answer_url of one inbound call delivered `n` times at once (a retry racing the first delivery). */
  async inboundConcurrent(authId: string, to: string, from: string, n: number, fallbackUrl?: string): Promise<{ replies: PlivoReply[]; call: PlivoCall }> {
    const call: PlivoCall = { requestUuid: randomUUID(), callUuid: randomUUID(), authId, from: digits(from), to: digits(to), direction: 'inbound', body: {}, status: 'in-progress', transfers: [], digitsSent: [] };
    this.calls.set(call.callUuid, call);
    const url = this.appOf(call)?.answerUrl ?? fallbackUrl;
    if (!url) throw new Error(`number ${to} has no application answer_url`);
    call.answerHook = { url, params: this.params(call, { CallStatus: 'ringing' }) };
    const replies = await Promise.all(Array.from({ length: n }, () => this.webhook(authId, url, call.answerHook!.params)));
    return { replies: replies.map((r) => parsePlivoXml(r.status, r.body)), call };
  }

  /** Plivo retries the answer_url of an inbound call: the same request, signed again with a new nonce. */
  async redeliver(call: PlivoCall): Promise<PlivoReply> {
    const r = await this.webhook(call.authId, call.answerHook!.url, call.answerHook!.params);
    return parsePlivoXml(r.status, r.body);
  }

  /** Plivo connects to the stream URL of the answer XML. */
  connect(streamUrl: string, call: PlivoCall): FakePhoneStream {
    return new FakePhoneStream(streamUrl, plivoDialect(call));
  }
}
