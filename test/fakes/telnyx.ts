// A local fake of Telnyx Call Control (REST v2, signed webhooks, the media-streaming WebSocket), speaking Telnyx's
// wire format: Bearer API key (401 with a JSON:API `errors` array otherwise), `POST /v2/calls` → `{data:
// {call_control_id, …}}`, call commands under /v2/calls/{id}/actions/…, phone numbers and Call Control
// Applications; webhooks are JSON `{data: {event_type, payload}}` signed with the account's Ed25519 key
// (`telnyx-signature-ed25519` over "{timestamp}|{body}", computed here with node:crypto, independently of the
// service, and checked by the telnyx SDK's webhooks.unwrap); the stream dialect of media/transports/carriers/telnyx.ts (connected, start{call_control_id} + stream_id,
// media, dtmf, mark, stop; from the service media, mark, clear).
import { generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakePhoneStream, type PhoneDialect } from './carrier-phone.ts';
import { sdkMustAccept, sdkTelnyxAccepts } from './carrier-sdks.ts';
import { fakeMp3, listenFake } from './http-fake.ts';

export interface TelnyxAccount {
  apiKey: string;
  publicKey: string;
  privateKey: KeyObject;
  connectionId: string;
  app: { application_name: string; webhook_event_url: string | null };
  numbers: Array<{ id: string; phone_number: string; connection_id: string | null }>;
}

export interface TelnyxCall {
  id: string;
  account: TelnyxAccount;
  from: string;
  to: string;
  direction: 'incoming' | 'outgoing';
  body: Record<string, unknown>;
  webhookUrl: string | null;
  streamUrl: string | null;
  commands: Array<{ action: string; body: Record<string, unknown> }>;
  state: string;
  /** the last webhook delivered (url, exact body): Telnyx redelivers the same event when our answer was not 2xx */
  lastEvent?: { url: string; body: string };
}

export function telnyxDialect(call: TelnyxCall): PhoneDialect {
  const streamId = randomUUID();
  let seq = 0;
  const next = () => String(++seq);
  return {
    codec: 'mulaw',
    rate: 8000,
    callerMs: 20,
    hello: () => [
      JSON.stringify({ event: 'connected', version: '1.0.0' }),
      JSON.stringify({
        event: 'start', sequence_number: next(), stream_id: streamId,
        start: { user_id: randomUUID(), call_control_id: call.id, call_session_id: randomUUID(), from: call.from, to: call.to, media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 } },
      }),
    ],
    media: (bytes, chunk, ts) => JSON.stringify({ event: 'media', sequence_number: next(), stream_id: streamId, media: { track: 'inbound', chunk: String(chunk), timestamp: String(ts), payload: Buffer.from(bytes).toString('base64') } }),
    dtmf: (digit) => JSON.stringify({ event: 'dtmf', sequence_number: next(), stream_id: streamId, dtmf: { digit } }),
    markEcho: (name) => JSON.stringify({ event: 'mark', sequence_number: next(), stream_id: streamId, mark: { name } }),
    stop: () => JSON.stringify({ event: 'stop', sequence_number: next(), stream_id: streamId, stop: { user_id: '', call_control_id: call.id } }),
    parse(data, isBinary) {
      if (isBinary) return { kind: 'other' };
      const m = JSON.parse(data.toString('utf8')) as Record<string, any>;
      if (m.event === 'media' && typeof m.media?.payload === 'string') return { kind: 'audio', bytes: new Uint8Array(Buffer.from(m.media.payload, 'base64')) };
      if (m.event === 'mark' && typeof m.mark?.name === 'string') return { kind: 'mark', name: m.mark.name };
      if (m.event === 'clear') return { kind: 'clear' };
      return { kind: 'other' };
    },
  };
}

export class FakeTelnyx extends EventEmitter {
  /** Recordings of transfers, served at their pre-signed URL. */
  readonly recordings = new Map<string, { sig: string; audio: Buffer }>();
  readonly accounts: TelnyxAccount[] = [];
  readonly calls = new Map<string, TelnyxCall>();
  private failures = new Map<string, Array<{ status: number; title: string }>>();
  private commandFailures = new Map<string, { status: number; title: string }>();
  private server: { port: number; close(): Promise<void> } | null = null;
  origin = '';

  static async start(): Promise<FakeTelnyx> {
    const f = new FakeTelnyx();
    f.server = await listenFake((req, res) => f.handle(req, res));
    f.origin = `http://127.0.0.1:${f.server.port}`;
    return f;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  addAccount(): TelnyxAccount {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    const acc: TelnyxAccount = {
      apiKey: `KEY${randomBytes(16).toString('hex').toUpperCase()}`, publicKey: raw.toString('base64'), privateKey,
      connectionId: String(Math.floor(Math.random() * 1e18)), app: { application_name: 'my app', webhook_event_url: null }, numbers: [],
    };
    this.accounts.push(acc);
    return acc;
  }

  addNumber(acc: TelnyxAccount, e164: string): void {
    acc.numbers.push({ id: String(Math.floor(Math.random() * 1e18)), phone_number: e164, connection_id: null });
  }

  /** The account's next `action` command (answer, transfer, …) answers this HTTP error. */
  failNextCommand(acc: TelnyxAccount, action: string, status: number, title: string): void {
    this.commandFailures.set(`${acc.apiKey}:${action}`, { status, title });
  }

  failNextDial(acc: TelnyxAccount, status: number, title: string): void {
    this.failures.set(acc.apiKey, [...(this.failures.get(acc.apiKey) ?? []), { status, title }]);
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
  private error(res: ServerResponse, status: number, code: string, title: string, detail = title): void {
    this.json(res, status, { errors: [{ code, title, detail }] });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const url = new URL(req.url ?? '/', this.origin);
    // recording_urls are pre-signed storage URLs (no API key): the signature in the query is the only credential
    const file = /^\/recordings\/([^/]+)\.mp3$/.exec(url.pathname);
    if (file && req.method === 'GET') {
      const r = this.recordings.get(file[1]!);
      if (!r || url.searchParams.get('X-Amz-Signature') !== r.sig) return this.error(res, 403, '403', 'AccessDenied');
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(r.audio.length) }).end(r.audio);
      return;
    }
    const acc = this.accounts.find((a) => req.headers.authorization === `Bearer ${a.apiKey}`);
    if (!acc) return this.error(res, 401, '10009', 'Authentication failed', 'The API key is not valid');
    let body: Record<string, any> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, any>) : {};
    } catch {
      return this.error(res, 400, '10015', 'Bad Request', 'invalid JSON');
    }
    const path = url.pathname;
    const app = /^\/v2\/call_control_applications\/([^/]+)$/.exec(path);
    if (app) {
      if (app[1] !== acc.connectionId) return this.error(res, 404, '10005', 'Resource not found');
      if (req.method === 'PATCH') {
        if (!body.application_name || !body.webhook_event_url) return this.error(res, 422, '10015', 'Invalid parameters', 'application_name and webhook_event_url are required');
        acc.app = { application_name: body.application_name, webhook_event_url: body.webhook_event_url };
      }
      return this.json(res, 200, { data: { id: acc.connectionId, record_type: 'call_control_application', ...acc.app } });
    }
    if (path === '/v2/phone_numbers' && req.method === 'GET') {
      const want = url.searchParams.get('filter[phone_number]');
      return this.json(res, 200, { data: acc.numbers.filter((n) => !want || n.phone_number === want).map((n) => ({ ...n, record_type: 'phone_number' })), meta: { total_results: 0 } });
    }
    const pn = /^\/v2\/phone_numbers\/([^/]+)$/.exec(path);
    if (pn && req.method === 'PATCH') {
      const n = acc.numbers.find((x) => x.id === pn[1]);
      if (!n) return this.error(res, 404, '10005', 'Resource not found');
      if (body.connection_id !== undefined) n.connection_id = String(body.connection_id);
      return this.json(res, 200, { data: { ...n, record_type: 'phone_number' } });
    }
    if (path === '/v2/calls' && req.method === 'POST') {
      const failure = this.failures.get(acc.apiKey)?.shift();
      if (failure) return this.error(res, failure.status, '90000', failure.title);
      if (body.connection_id !== acc.connectionId) return this.error(res, 422, '10015', 'Invalid connection_id');
      if (!body.to || !body.from) return this.error(res, 422, '10015', 'Missing to/from');
      const call: TelnyxCall = {
        id: `v3:${randomBytes(12).toString('base64url')}`, account: acc, from: body.from, to: body.to, direction: 'outgoing', body,
        webhookUrl: body.webhook_url ?? acc.app.webhook_event_url, streamUrl: body.stream_url ?? null, commands: [], state: 'bridging',
      };
      this.calls.set(call.id, call);
      this.json(res, 200, { data: { call_control_id: call.id, call_leg_id: randomUUID(), call_session_id: randomUUID(), is_alive: false, record_type: 'call' } });
      this.emit('dial', call);
      void this.event(call, 'call.initiated', { state: 'bridging' }).catch(() => undefined);
      return;
    }
    const action = /^\/v2\/calls\/([^/]+)\/actions\/([a-z_]+)$/.exec(path);
    if (action && req.method === 'POST') {
      const call = this.calls.get(decodeURIComponent(action[1]!));
      if (!call || call.account !== acc) return this.error(res, 404, '10005', 'Resource not found');
      if (call.state === 'hangup') return this.error(res, 422, '90018', 'Call has already ended');
      const failure = this.commandFailures.get(`${acc.apiKey}:${action[2]}`);
      if (failure) {
        this.commandFailures.delete(`${acc.apiKey}:${action[2]}`);
        call.commands.push({ action: `${action[2]}:failed`, body });
        return this.error(res, failure.status, '90000', failure.title);
      }
      if (action[2] === 'send_dtmf' && (typeof body.digits !== 'string' || !/^[0-9A-D*#wW]+$/.test(body.digits))) {
        return this.error(res, 422, '90015', 'Invalid digits');
      }
      call.commands.push({ action: action[2]!, body });
      if (action[2] === 'answer') call.streamUrl = body.stream_url ?? null;
      this.json(res, 200, { data: { result: 'ok' } });
      this.emit(action[2]!, call, body);
      if (action[2] === 'hangup') void this.hangupEvent(call.id, 'normal_clearing').catch(() => undefined);
      return;
    }
    return this.error(res, 404, '10005', 'Resource not found');
  }

  // ── webhooks (Telnyx → service) ─────────────────────────────────────────────────────────────────────────
  async event(call: TelnyxCall, eventType: string, extra: Record<string, unknown> = {}, signing?: 'forged' | 'unsigned'): Promise<{ status: number; body: string }> {
    const url = call.direction === 'incoming' ? call.account.app.webhook_event_url : call.webhookUrl;
    if (!url) return { status: 0, body: '' };
    const body = JSON.stringify({
      data: {
        record_type: 'event', event_type: eventType, id: randomUUID(), occurred_at: new Date().toISOString(),
        payload: { call_control_id: call.id, call_leg_id: randomUUID(), call_session_id: randomUUID(), connection_id: call.account.connectionId, direction: call.direction, from: call.from, to: call.to, state: call.state, ...extra },
      },
      meta: { attempt: 1, delivered_to: url },
    });
    call.lastEvent = { url, body };
    return this.deliver(call, url, body, signing);
  }

  /** Telnyx redelivers the last event of a call (same event id and body, a new timestamp and signature). */
  redeliver(call: TelnyxCall): Promise<{ status: number; body: string }> {
    return this.deliver(call, call.lastEvent!.url, call.lastEvent!.body);
  }

  private async deliver(call: TelnyxCall, url: string, body: string, signing?: 'forged' | 'unsigned'): Promise<{ status: number; body: string }> {
    const ts = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'telnyx-webhooks' };
    if (signing !== 'unsigned') {
      const key = signing === 'forged' ? generateKeyPairSync('ed25519').privateKey : call.account.privateKey;
      headers['telnyx-signature-ed25519'] = sign(null, Buffer.from(`${ts}|${body}`), key).toString('base64');
      headers['telnyx-timestamp'] = ts;
      if (!signing) sdkMustAccept(await sdkTelnyxAccepts(call.account.publicKey, body, headers), 'telnyx-signature-ed25519');
    }
    const res = await fetch(url, { method: 'POST', headers, body });
    return { status: res.status, body: await res.text() };
  }

  /**
   * A transfer commanded with `record` ends: Telnyx sends `call.recording.saved` (pre-signed recording_urls) to the
   * transfer's webhook_url, signed like every event. Throws when the transfer asked for no recording.
   */
  async recordingSaved(id: string, o: { durationS?: number; signing?: 'forged' | 'unsigned' } = {}): Promise<{ status: number; body: string }> {
    const call = this.calls.get(id)!;
    const transfer = call.commands.find((c) => c.action === 'transfer');
    const url = transfer?.body.webhook_url;
    if (!transfer || transfer.body.record !== 'record-from-answer' || typeof url !== 'string') throw new Error(`the transfer records nothing: ${JSON.stringify(transfer?.body)}`);
    const recId = randomUUID();
    const sig = randomBytes(16).toString('hex');
    this.recordings.set(recId, { sig, audio: fakeMp3() });
    const end = new Date();
    const start = new Date(end.getTime() - (o.durationS ?? 1) * 1000);
    const file = `${this.origin}/recordings/${recId}.mp3?X-Amz-Expires=600&X-Amz-Signature=${sig}`;
    const body = JSON.stringify({
      data: {
        record_type: 'event', event_type: 'call.recording.saved', id: randomUUID(), occurred_at: end.toISOString(),
        payload: {
          call_control_id: call.id, call_leg_id: randomUUID(), call_session_id: randomUUID(), connection_id: call.account.connectionId,
          recording_id: recId, channels: 'dual', recording_started_at: start.toISOString(), recording_ended_at: end.toISOString(),
          recording_urls: { mp3: file, wav: null }, public_recording_urls: { mp3: null, wav: null },
        },
      },
      meta: { attempt: 1, delivered_to: url },
    });
    return this.deliver(call, url, body, o.signing);
  }

  async answer(id: string): Promise<void> {
    const call = this.calls.get(id)!;
    call.state = 'answered';
    await this.event(call, 'call.answered');
  }

  async hangupEvent(id: string, cause: string, signing?: 'forged' | 'unsigned'): Promise<{ status: number; body: string }> {
    const call = this.calls.get(id)!;
    if (!signing) call.state = 'hangup';
    const now = new Date();
    return this.event(call, 'call.hangup', { hangup_cause: cause, hangup_source: 'callee', start_time: new Date(now.getTime() - 5000).toISOString(), end_time: now.toISOString() }, signing);
  }

  async amd(id: string, result: 'human' | 'machine' | 'not_sure'): Promise<{ status: number }> {
    return this.event(this.calls.get(id)!, 'call.machine.detection.ended', { result });
  }

  /** A caller dials a number: `call.initiated` (incoming) goes to the connection's webhook_event_url. */
  async inbound(acc: TelnyxAccount, to: string, from: string, signing?: 'forged' | 'unsigned', fallbackUrl?: string): Promise<{ status: number; call: TelnyxCall }> {
    const call: TelnyxCall = { id: `v3:${randomBytes(12).toString('base64url')}`, account: acc, from, to, direction: 'incoming', body: {}, webhookUrl: null, streamUrl: null, commands: [], state: 'parked' };
    this.calls.set(call.id, call);
    if (!acc.app.webhook_event_url && fallbackUrl) acc.app.webhook_event_url = fallbackUrl;
    const r = await this.event(call, 'call.initiated', {}, signing);
    return { status: r.status, call };
  }

  connect(call: TelnyxCall): FakePhoneStream {
    if (!call.streamUrl) throw new Error('the call has no stream_url');
    return new FakePhoneStream(call.streamUrl, telnyxDialect(call));
  }
}
