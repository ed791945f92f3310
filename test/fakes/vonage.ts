// A local fake of Vonage (Voice API, Applications API, Numbers API, signed callbacks, the WebSocket media leg),
// speaking Vonage's wire format: `POST /v1/calls` and `PUT /v1/calls/{uuid}` authenticated by an RS256 JWT of the
// application (checked against the application's public key: 401 otherwise), `/v2/applications/{id}` with HTTP
// Basic api_key:api_secret, `/account/numbers` and `/number/update` with api_key/api_secret parameters; callbacks
// (event_url, the application's answer_url / event_url) as JSON signed with an HS256 JWT of the signature secret
// carrying payload_hash (computed here independently of the service, checked by @vonage/jwt's verifySignature); the WebSocket leg of an NCCO `connect`
// (`websocket:connected` text with the endpoint headers, then binary 16-bit PCM frames of 20 ms both ways).
import { createHash, createHmac, generateKeyPairSync, randomBytes, randomUUID, verify, type KeyObject } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakePhoneStream, type PhoneDialect } from './carrier-phone.ts';
import { sdkMustAccept, sdkVonageAccepts } from './carrier-sdks.ts';
import { fakeMp3, listenFake } from './http-fake.ts';

export interface VonageAccount {
  apiKey: string;
  apiSecret: string;
  signatureSecret: string;
  applicationId: string;
  privateKeyPem: string;
  publicKey: KeyObject;
  app: { name: string; answerUrl: string | null; eventUrl: string | null; signed: boolean };
  numbers: Array<{ msisdn: string; country: string; appId: string | null }>;
}

export interface VonageCall {
  uuid: string;
  account: VonageAccount;
  from: string;
  to: string;
  direction: 'outbound' | 'inbound';
  body: Record<string, any>;
  ncco: any[];
  eventUrl: string | null;
  status: string;
  modifications: Array<Record<string, unknown>>;
  /** digits of PUT /v1/calls/{uuid}/dtmf, in order */
  digitsSent: string[];
  /** the inbound answer_url request (Vonage retries an answer_url that failed or timed out) */
  answerHook?: { url: string; payload: Record<string, unknown> };
}

/** The websocket endpoint of an NCCO's connect action. */
export function websocketOf(ncco: unknown): { uri: string; contentType: string; headers: Record<string, unknown> } | null {
  if (!Array.isArray(ncco)) return null;
  for (const a of ncco) {
    const ep = (a as { action?: string; endpoint?: Array<Record<string, any>> }).action === 'connect' ? (a as { endpoint?: Array<Record<string, any>> }).endpoint?.[0] : null;
    if (ep?.type === 'websocket') return { uri: String(ep.uri), contentType: String(ep['content-type']), headers: ep.headers ?? {} };
  }
  return null;
}

export function vonageDialect(call: VonageCall, ws: { contentType: string; headers: Record<string, unknown> }): PhoneDialect {
  const rate = /rate=16000/.test(ws.contentType) ? 16000 : 8000;
  return {
    codec: 'l16',
    rate,
    callerMs: 20,
    hello: () => [JSON.stringify({ event: 'websocket:connected', 'content-type': ws.contentType, ...ws.headers })],
    media: (bytes) => Buffer.from(bytes),
    dtmf: (digit) => JSON.stringify({ event: 'websocket:dtmf', digit, duration: 260 }),
    markEcho: () => null,
    stop: () => null,
    parse(data, isBinary) {
      // the test checks the sizes (payloadSizes): Vonage wants 20 ms frames
      if (isBinary) return { kind: 'audio', bytes: new Uint8Array(data) };
      return { kind: 'other' };
    },
  };
}

const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url');

export class FakeVonage extends EventEmitter {
  /** Recordings of NCCO `record` actions, served at /v1/files/{uuid} to the application's JWT. */
  readonly recordings = new Map<string, { applicationId: string; audio: Buffer }>();
  readonly accounts: VonageAccount[] = [];
  readonly calls = new Map<string, VonageCall>();
  private server: { port: number; close(): Promise<void> } | null = null;
  private failures = new Map<string, Array<{ status: number; title: string }>>();
  origin = '';

  static async start(): Promise<FakeVonage> {
    const f = new FakeVonage();
    f.server = await listenFake((req, res) => f.handle(req, res));
    f.origin = `http://127.0.0.1:${f.server.port}`;
    return f;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  addAccount(): VonageAccount {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const acc: VonageAccount = {
      apiKey: randomBytes(4).toString('hex'), apiSecret: randomBytes(8).toString('hex'), signatureSecret: randomBytes(24).toString('hex'),
      applicationId: randomUUID(), privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey,
      app: { name: 'my voice app', answerUrl: null, eventUrl: null, signed: false }, numbers: [],
    };
    this.accounts.push(acc);
    return acc;
  }

  addNumber(acc: VonageAccount, e164: string): void {
    acc.numbers.push({ msisdn: e164.replace(/^\+/, ''), country: 'US', appId: null });
  }

  failNextDial(acc: VonageAccount, status: number, title: string): void {
    this.failures.set(acc.applicationId, [...(this.failures.get(acc.applicationId) ?? []), { status, title }]);
  }

  private json(res: ServerResponse, status: number, body?: unknown): void {
    res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  }

  /** The account whose application signed this RS256 bearer token. */
  private byJwt(req: IncomingMessage): VonageAccount | null {
    const m = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/.exec(req.headers.authorization ?? '');
    if (!m) return null;
    try {
      const head = JSON.parse(Buffer.from(m[1]!, 'base64url').toString()) as { alg?: string };
      const claims = JSON.parse(Buffer.from(m[2]!, 'base64url').toString()) as { application_id?: string; exp?: number };
      const acc = this.accounts.find((a) => a.applicationId === claims.application_id);
      if (!acc || head.alg !== 'RS256' || (claims.exp ?? 0) < Date.now() / 1000) return null;
      const mine = verify('sha256', Buffer.from(`${m[1]}.${m[2]}`), acc.publicKey, Buffer.from(m[3]!, 'base64url'));
      // and as Vonage's own SDK checks an application JWT (@vonage/jwt verifySignature with the public key)
      return mine && sdkVonageAccepts(`${m[1]}.${m[2]}.${m[3]}`, acc.publicKey.export({ format: 'pem', type: 'spki' }).toString()) ? acc : null;
    } catch {
      return null;
    }
  }

  private byBasic(req: IncomingMessage): VonageAccount | null {
    const h = req.headers.authorization ?? '';
    if (!h.startsWith('Basic ')) return null;
    const [k, s] = Buffer.from(h.slice(6), 'base64').toString().split(':');
    return this.accounts.find((a) => a.apiKey === k && a.apiSecret === s) ?? null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const url = new URL(req.url ?? '/', this.origin);
    const path = url.pathname;
    const unauthorized = () => this.json(res, 401, { type: 'https://developer.nexmo.com/api-errors#unauthorized', title: 'Unauthorized', detail: 'You did not provide correct credentials.' });
    const app = /^\/v2\/applications\/([^/]+)$/.exec(path);
    if (app) {
      const acc = this.byBasic(req);
      if (!acc) return unauthorized();
      if (app[1] !== acc.applicationId) return this.json(res, 404, { title: 'Not Found', detail: 'Application not found' });
      if (req.method === 'PUT') {
        const body = JSON.parse(raw) as Record<string, any>;
        if (!body.name) return this.json(res, 400, { title: 'Bad Request', detail: 'name is required' });
        const v = body.capabilities?.voice;
        acc.app = { name: body.name, answerUrl: v?.webhooks?.answer_url?.address ?? null, eventUrl: v?.webhooks?.event_url?.address ?? null, signed: v?.signed_callbacks === true };
      }
      return this.json(res, 200, {
        id: acc.applicationId, name: acc.app.name,
        capabilities: { voice: { webhooks: { answer_url: { address: acc.app.answerUrl, http_method: 'POST' }, event_url: { address: acc.app.eventUrl, http_method: 'POST' } }, signed_callbacks: acc.app.signed } },
      });
    }
    if (path === '/account/numbers' || path === '/number/update') {
      const p = path === '/number/update' ? new URLSearchParams(raw) : url.searchParams;
      const acc = this.accounts.find((a) => a.apiKey === p.get('api_key') && a.apiSecret === p.get('api_secret'));
      if (!acc) return this.json(res, 401, { 'error-code': '401', 'error-code-label': 'authentication failed' });
      if (path === '/account/numbers') {
        const pattern = p.get('pattern') ?? '';
        const list = acc.numbers.filter((n) => n.msisdn.includes(pattern));
        return this.json(res, 200, { count: list.length, numbers: list.map((n) => ({ msisdn: n.msisdn, country: n.country, type: 'mobile-lvn', app_id: n.appId, features: ['VOICE'] })) });
      }
      const n = acc.numbers.find((x) => x.msisdn === p.get('msisdn') && x.country === p.get('country'));
      if (!n) return this.json(res, 420, { 'error-code': '420', 'error-code-label': 'Numbers from this country can not be updated / number not found' });
      n.appId = p.get('app_id');
      return this.json(res, 200, { 'error-code': '200', 'error-code-label': 'success' });
    }
    if (path === '/v1/calls' && req.method === 'POST') {
      const acc = this.byJwt(req);
      if (!acc) return unauthorized();
      const failure = this.failures.get(acc.applicationId)?.shift();
      if (failure) return this.json(res, failure.status, { title: failure.title, detail: failure.title });
      const body = JSON.parse(raw) as Record<string, any>;
      if (!Array.isArray(body.to) || !body.from || (!body.ncco && !body.answer_url)) return this.json(res, 400, { title: 'Bad Request', detail: 'to, from and ncco or answer_url are required' });
      const call: VonageCall = {
        uuid: randomUUID(), account: acc, from: body.from.number, to: body.to[0].number ?? body.to[0].uri, direction: 'outbound', body,
        ncco: body.ncco ?? [], eventUrl: body.event_url?.[0] ?? acc.app.eventUrl, status: 'started', modifications: [], digitsSent: [],
      };
      this.calls.set(call.uuid, call);
      this.json(res, 201, { uuid: call.uuid, status: 'started', direction: 'outbound', conversation_uuid: `CON-${randomUUID()}` });
      this.emit('dial', call);
      void this.event(call, 'started').catch(() => undefined);
      return;
    }
    const file = /^\/v1\/files\/([^/]+)$/.exec(path);
    if (file && req.method === 'GET') {
      const acc = this.byJwt(req);
      if (!acc) return unauthorized();
      const r = this.recordings.get(file[1]!);
      if (!r || r.applicationId !== acc.applicationId) return this.json(res, 404, { title: 'Not Found', detail: 'file not found' });
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(r.audio.length) }).end(r.audio);
      return;
    }
    const dt = /^\/v1\/calls\/([^/]+)\/dtmf$/.exec(path);
    if (dt && req.method === 'PUT') {
      const acc = this.byJwt(req);
      if (!acc) return unauthorized();
      const call = this.calls.get(dt[1]!);
      if (!call || call.account !== acc) return this.json(res, 404, { title: 'Not Found', detail: 'call not found' });
      const body = JSON.parse(raw) as Record<string, any>;
      if (typeof body.digits !== 'string' || !/^[0-9*#p]+$/.test(body.digits)) return this.json(res, 400, { title: 'Bad Request', detail: 'invalid digits' });
      call.digitsSent.push(body.digits);
      this.json(res, 200, { message: 'DTMF sent', uuid: call.uuid });
      return;
    }
    const cm = /^\/v1\/calls\/([^/]+)$/.exec(path);
    if (cm && req.method === 'PUT') {
      const acc = this.byJwt(req);
      if (!acc) return unauthorized();
      const call = this.calls.get(cm[1]!);
      if (!call || call.account !== acc) return this.json(res, 404, { title: 'Not Found', detail: 'call not found' });
      const body = JSON.parse(raw) as Record<string, any>;
      call.modifications.push(body);
      res.writeHead(204).end();
      this.emit(String(body.action), call, body);
      if (body.action === 'hangup') void this.event(call, 'completed', { duration: '5' }).catch(() => undefined);
      return;
    }
    return this.json(res, 404, { title: 'Not Found' });
  }

  // ── callbacks (Vonage → service) ────────────────────────────────────────────────────────────────────────
  /** JSON POST with an HS256 JWT of the signature secret and payload_hash (forged: another secret; unsigned: none). */
  async post(acc: VonageAccount, url: string, payload: Record<string, unknown>, signing?: 'forged' | 'unsigned'): Promise<{ status: number; body: string }> {
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (signing !== 'unsigned') {
      const now = Math.floor(Date.now() / 1000);
      const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
      const claims = b64url(JSON.stringify({ iat: now, exp: now + 300, jti: randomUUID(), iss: 'Vonage', payload_hash: createHash('sha256').update(body).digest('hex'), api_key: acc.apiKey, application_id: acc.applicationId }));
      const secret = signing === 'forged' ? 'not-the-signature-secret' : acc.signatureSecret;
      const jwt = `${head}.${claims}.${createHmac('sha256', secret).update(`${head}.${claims}`).digest('base64url')}`;
      if (!signing) sdkMustAccept(sdkVonageAccepts(jwt, acc.signatureSecret), 'signed-callback JWT');
      headers.authorization = `Bearer ${jwt}`;
    }
    const res = await fetch(url, { method: 'POST', headers, body });
    return { status: res.status, body: await res.text() };
  }

  /**
   * The `record` action of the transfer NCCO finished: Vonage posts the saved recording to the action's eventUrl
   * (signed like every callback). Throws when the transfer NCCO records nothing.
   */
  async recordingSaved(call: VonageCall, o: { durationS?: number; signing?: 'forged' | 'unsigned' } = {}): Promise<{ status: number; body: string }> {
    const transfer = call.modifications.find((m) => m.action === 'transfer') as { destination?: { ncco?: Array<Record<string, any>> } } | undefined;
    const rec = transfer?.destination?.ncco?.find((a) => a.action === 'record');
    const url = Array.isArray(rec?.eventUrl) ? rec.eventUrl[0] : undefined;
    if (typeof url !== 'string') throw new Error(`the transfer NCCO records nothing: ${JSON.stringify(transfer)}`);
    const id = randomUUID();
    this.recordings.set(id, { applicationId: call.account.applicationId, audio: fakeMp3() });
    const end = new Date();
    const start = new Date(end.getTime() - (o.durationS ?? 1) * 1000);
    return this.post(call.account, url, {
      start_time: start.toISOString(), end_time: end.toISOString(), recording_url: `${this.origin}/v1/files/${id}`, recording_uuid: id,
      size: fakeMp3().length, conversation_uuid: `CON-${call.uuid}`, timestamp: end.toISOString(),
    }, o.signing);
  }

  async event(call: VonageCall, status: string, extra: Record<string, unknown> = {}, signing?: 'forged' | 'unsigned'): Promise<{ status: number; body: string }> {
    if (!signing) call.status = status;
    const url = call.direction === 'inbound' ? call.account.app.eventUrl : call.eventUrl;
    if (!url) return { status: 0, body: '' };
    return this.post(call.account, url, {
      from: call.from, to: call.to, uuid: call.uuid, conversation_uuid: `CON-${call.uuid}`, status, direction: call.direction, timestamp: new Date().toISOString(), ...extra,
    }, signing);
  }

  /** A caller dials a number linked to the application: its answer_url is fetched (JSON POST) for the NCCO. */
  async inbound(acc: VonageAccount, to: string, from: string, signing?: 'forged' | 'unsigned', fallbackUrl?: string): Promise<{ status: number; ncco: unknown; call: VonageCall }> {
    const call: VonageCall = { uuid: randomUUID(), account: acc, from: from.replace(/^\+/, ''), to: to.replace(/^\+/, ''), direction: 'inbound', body: {}, ncco: [], eventUrl: null, status: 'started', modifications: [], digitsSent: [] };
    this.calls.set(call.uuid, call);
    const url = acc.app.answerUrl ?? fallbackUrl;
    if (!url) throw new Error('the application has no answer_url');
    call.answerHook = { url, payload: { to: call.to, from: call.from, uuid: call.uuid, conversation_uuid: `CON-${call.uuid}`, region_url: 'https://api-us-3.vonage.com' } };
    const r = await this.post(acc, url, call.answerHook.payload, signing);
    let ncco: unknown = null;
    try {
      ncco = JSON.parse(r.body);
    } catch {
      ncco = null;
    }
    call.ncco = Array.isArray(ncco) ? ncco : [];
    return { status: r.status, ncco, call };
  }

  /** Vonage retries the answer_url of an inbound call: the same request, signed again. The NCCO it got. */
  async redeliver(call: VonageCall): Promise<{ status: number; ncco: unknown }> {
    const r = await this.post(call.account, call.answerHook!.url, call.answerHook!.payload);
    try {
      return { status: r.status, ncco: JSON.parse(r.body) };
    } catch {
      return { status: r.status, ncco: null };
    }
  }

  /** Vonage opens the WebSocket leg the call's NCCO names. */
  connect(call: VonageCall): FakePhoneStream {
    const ws = websocketOf(call.ncco);
    if (!ws) throw new Error(`no websocket endpoint in the NCCO: ${JSON.stringify(call.ncco)}`);
    return new FakePhoneStream(ws.uri, vonageDialect(call, ws));
  }
}
