// A local fake of Exotel (Connect Voice AI, ExoPhones, status callbacks, the Voicebot applet's dynamic URL and the
// AgentStream WebSocket), speaking Exotel's wire format: HTTP Basic api_key:api_token (401 with a RestException
// otherwise), `POST /v1/Accounts/{sid}/Calls/connect.json` (form: From, CallerId, StreamUrl, StreamType, …) →
// `{Call: {Sid, Status, …}}`, `GET /v2_beta/Accounts/{sid}/IncomingPhoneNumbers`; unsigned status callbacks (JSON,
// StatusCallbackContentType) to the URL we gave; inbound calls GET the Voicebot applet URL pasted in the flow and
// connect to the `url` it answers; the stream dialect of media/transports/carriers/exotel.ts (connected, start{stream_sid,
// call_sid, media_format}, ~100 ms base64 16-bit PCM media, dtmf, mark echoes, stop; from the service media in
// multiples of 320 bytes, mark, clear).
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakePhoneStream, type PhoneDialect } from './carrier-phone.ts';
import { listenFake } from './http-fake.ts';

export interface ExotelAccount {
  sid: string;
  apiKey: string;
  apiToken: string;
  numbers: string[];
  /** the Voicebot applet URL pasted into the numbers' flow */
  voicebotUrl: string | null;
}

export interface ExotelCall {
  sid: string;
  account: ExotelAccount;
  from: string;
  to: string;
  params: URLSearchParams;
  streamUrl: string | null;
  status: string;
  /** the Voicebot applet's request of an inbound call (Exotel fetches it again when it failed) */
  voicebotRequest?: string;
}

export function exotelDialect(call: ExotelCall, codec: 'pcm16' | 'mulaw' = 'pcm16'): PhoneDialect {
  const streamSid = `MZ${randomBytes(12).toString('hex')}`;
  let seq = 0;
  const next = () => String(++seq);
  return {
    codec: codec === 'mulaw' ? 'mulaw' : 'l16',
    rate: 8000,
    callerMs: 100,
    hello: () => [
      JSON.stringify({ event: 'connected' }),
      JSON.stringify({
        event: 'start', sequence_number: next(), stream_sid: streamSid,
        start: {
          stream_sid: streamSid, call_sid: call.sid, account_sid: call.account.sid, from: call.from, to: call.to, custom_parameters: {},
          media_format: { encoding: codec === 'mulaw' ? 'audio/x-mulaw' : 'audio/x-raw', sample_rate: '8000', bit_rate: codec === 'mulaw' ? '8' : '16' },
        },
      }),
    ],
    media: (bytes, chunk, ts) => JSON.stringify({ event: 'media', sequence_number: next(), stream_sid: streamSid, media: { chunk: String(chunk), timestamp: String(ts), payload: Buffer.from(bytes).toString('base64') } }),
    dtmf: (digit) => JSON.stringify({ event: 'dtmf', sequence_number: next(), stream_sid: streamSid, dtmf: { digit, duration: '100' } }),
    markEcho: (name) => JSON.stringify({ event: 'mark', sequence_number: next(), stream_sid: streamSid, mark: { name } }),
    stop: () => JSON.stringify({ event: 'stop', sequence_number: next(), stream_sid: streamSid, stop: { call_sid: call.sid, account_sid: call.account.sid, reason: 'callended' } }),
    parse(data, isBinary) {
      if (isBinary) return { kind: 'other' };
      const m = JSON.parse(data.toString('utf8')) as Record<string, any>;
      if (m.stream_sid !== streamSid) return { kind: 'other' };
      if (m.event === 'media' && typeof m.media?.payload === 'string') return { kind: 'audio', bytes: new Uint8Array(Buffer.from(m.media.payload, 'base64')) };
      if (m.event === 'mark' && typeof m.mark?.name === 'string') return { kind: 'mark', name: m.mark.name };
      if (m.event === 'clear') return { kind: 'clear' };
      return { kind: 'other' };
    },
  };
}

export class FakeExotel extends EventEmitter {
  readonly accounts: ExotelAccount[] = [];
  readonly calls = new Map<string, ExotelCall>();
  private server: { port: number; close(): Promise<void> } | null = null;
  origin = '';

  static async start(): Promise<FakeExotel> {
    const f = new FakeExotel();
    f.server = await listenFake((req, res) => f.handle(req, res));
    f.origin = `http://127.0.0.1:${f.server.port}`;
    return f;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  addAccount(): ExotelAccount {
    const acc: ExotelAccount = { sid: `exo${randomBytes(6).toString('hex')}`, apiKey: randomBytes(10).toString('hex'), apiToken: randomBytes(16).toString('hex'), numbers: [], voicebotUrl: null };
    this.accounts.push(acc);
    return acc;
  }

  private failures = new Map<string, Array<{ status: number; message: string }>>();

  failNextDial(acc: ExotelAccount, status: number, message: string): void {
    this.failures.set(acc.sid, [...(this.failures.get(acc.sid) ?? []), { status, message }]);
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const url = new URL(req.url ?? '/', this.origin);
    const m = /^\/(v1|v2_beta)\/Accounts\/([^/]+)\/(.+)$/.exec(url.pathname);
    const acc = m ? this.accounts.find((a) => a.sid === m[2]) : undefined;
    const h = req.headers.authorization ?? '';
    const [k, t] = h.startsWith('Basic ') ? Buffer.from(h.slice(6), 'base64').toString().split(':') : [];
    if (!m || !acc || k !== acc.apiKey || t !== acc.apiToken) return this.json(res, 401, { RestException: { Status: 401, Message: 'Authentication is required to view this page.' } });
    if (m[1] === 'v2_beta' && m[3] === 'IncomingPhoneNumbers' && req.method === 'GET') {
      return this.json(res, 200, { incoming_phone_numbers: acc.numbers.map((n, i) => ({ sid: `PN${i}`, phone_number: n, friendly_name: n, capabilities: { voice: true } })) });
    }
    if (m[1] === 'v1' && m[3] === 'Calls/connect.json' && req.method === 'POST') {
      const failure = this.failures.get(acc.sid)?.shift();
      if (failure) return this.json(res, failure.status, { RestException: { Status: failure.status, Message: failure.message } });
      const p = new URLSearchParams(raw);
      if (!p.get('From') || !p.get('CallerId') || !p.get('StreamUrl') || p.get('StreamType') !== 'bidirectional') {
        return this.json(res, 400, { RestException: { Status: 400, Message: 'From, CallerId, StreamUrl and StreamType=bidirectional are required' } });
      }
      const call: ExotelCall = { sid: randomBytes(16).toString('hex'), account: acc, from: p.get('CallerId')!, to: p.get('From')!, params: p, streamUrl: p.get('StreamUrl'), status: 'queued' };
      this.calls.set(call.sid, call);
      this.json(res, 200, { Call: { Sid: call.sid, AccountSid: acc.sid, From: call.to, PhoneNumberSid: call.from, Status: 'in-progress', Direction: 'outbound-api', DateCreated: new Date().toISOString() } });
      this.emit('dial', call);
      return;
    }
    return this.json(res, 404, { RestException: { Status: 404, Message: 'Not found' } });
  }

  /** A status callback to the URL of the dial (JSON). forged: a wrong token; unsigned: the token removed. */
  async status(call: ExotelCall, status: string, eventType: 'answered' | 'terminal', signing?: 'forged' | 'unsigned', durationS = 0): Promise<{ status: number }> {
    if (!signing) call.status = status;
    const u = new URL(call.params.get('StatusCallback')!);
    if (signing === 'forged') u.searchParams.set('token', 'A'.repeat(32));
    if (signing === 'unsigned') u.searchParams.delete('token');
    const res = await fetch(u, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ CallSid: call.sid, EventType: eventType, Status: status, From: call.to, To: call.from, ConversationDuration: durationS, CustomField: call.params.get('CustomField'), DateUpdated: new Date().toISOString() }),
    });
    await res.text();
    return { status: res.status };
  }

  /** A caller dials an ExoPhone: the flow's Voicebot applet fetches its dynamic URL and connects to the `url` answered. */
  async inbound(acc: ExotelAccount, to: string, from: string, signing?: 'forged' | 'unsigned'): Promise<{ status: number; url: string | null; call: ExotelCall }> {
    if (!acc.voicebotUrl) throw new Error('no Voicebot applet URL pasted for this account');
    const call: ExotelCall = { sid: randomBytes(16).toString('hex'), account: acc, from, to, params: new URLSearchParams(), streamUrl: null, status: 'in-progress' };
    this.calls.set(call.sid, call);
    const u = new URL(acc.voicebotUrl);
    if (signing === 'forged') u.searchParams.set('sig', 'A'.repeat(32));
    if (signing === 'unsigned') u.searchParams.delete('sig');
    for (const [k, v] of Object.entries({ CallSid: call.sid, CallFrom: from, CallTo: to, Direction: 'incoming', From: from, To: to })) u.searchParams.set(k, v);
    call.voicebotRequest = u.toString();
    const r = await this.fetchVoicebot(call.voicebotRequest);
    call.streamUrl = r.url;
    return { ...r, call };
  }

  /** The Voicebot applet fetches its URL again for the same call. */
  redeliver(call: ExotelCall): Promise<{ status: number; url: string | null }> {
    return this.fetchVoicebot(call.voicebotRequest!);
  }

  private async fetchVoicebot(u: string): Promise<{ status: number; url: string | null }> {
    const res = await fetch(u);
    const text = await res.text();
    let url: string | null = null;
    try {
      url = (JSON.parse(text) as { url?: string | null }).url ?? null;
    } catch {
      url = null;
    }
    return { status: res.status, url };
  }

  connect(call: ExotelCall): FakePhoneStream {
    if (!call.streamUrl) throw new Error('no stream URL');
    return new FakePhoneStream(call.streamUrl, exotelDialect(call, new URL(call.streamUrl).searchParams.get('codec') === 'mulaw' ? 'mulaw' : 'pcm16'));
  }
}
