// A local fake of Smartflo's REST API (the REST side; the Voice Bot media stream is test/fakes/smartflo-media.ts):
// `GET /v1/my_number` (the account's DIDs, bearer token; 401 otherwise — also how a token is checked),
// `POST /v1/click_to_call_support` (JSON, the click-to-call `api_key` in the body, `async=1`, answers at once with
// no call id; the dial is recorded with its `custom_identifier` so a test can open the returning stream) and
// `POST /v1/call/hangup`.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenFake } from './http-fake.ts';

export interface SmartfloAccount {
  token: string;
  clickToCallKey: string;
  /** DIDs as Smartflo lists them (country code, no plus). */
  numbers: string[];
}

export interface SmartfloDial {
  account: SmartfloAccount;
  body: Record<string, unknown>;
  customIdentifier: string | null;
}

export class FakeSmartflo extends EventEmitter {
  readonly accounts: SmartfloAccount[] = [];
  readonly dials: SmartfloDial[] = [];
  readonly hangups: Array<{ callId: unknown }> = [];
  readonly transfers: Array<{ callId: unknown; intercom: unknown }> = [];
  readonly requests: Array<{ method: string; path: string; authorized: boolean }> = [];
  private server: { port: number; close(): Promise<void> } | null = null;
  private failures = new Map<string, { status: number; message: string }>();
  origin = '';

  static async start(): Promise<FakeSmartflo> {
    const fake = new FakeSmartflo();
    fake.server = await listenFake((req, res) => fake.handle(req, res));
    fake.origin = `http://127.0.0.1:${fake.server.port}`;
    return fake;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  addAccount(numbers: string[] = []): SmartfloAccount {
    const acc: SmartfloAccount = { token: randomBytes(24).toString('hex'), clickToCallKey: randomBytes(12).toString('hex'), numbers };
    this.accounts.push(acc);
    return acc;
  }

  /** The next click-to-call with this api_key answers this error. */
  failNextDial(clickToCallKey: string, status: number, message: string): void {
    this.failures.set(clickToCallKey, { status, message });
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private byToken(req: IncomingMessage): SmartfloAccount | null {
    const h = req.headers.authorization ?? '';
    const token = h.replace(/^Bearer\s+/i, '');
    return this.accounts.find((a) => a.token === token) ?? null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const url = new URL(req.url ?? '/', this.origin);
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      return this.json(res, 400, { success: false, message: 'Malformed JSON' });
    }
    if (url.pathname === '/v1/my_number' && req.method === 'GET') {
      const acc = this.byToken(req);
      this.requests.push({ method: 'GET', path: url.pathname, authorized: acc !== null });
      if (!acc) return this.json(res, 401, { success: false, message: 'Unauthenticated.' });
      return this.json(res, 200, acc.numbers.map((did, i) => ({ id: i + 1, did, alias: did, destination: 'voicebot' })));
    }
    if (url.pathname === '/v1/click_to_call_support' && req.method === 'POST') {
      const acc = this.accounts.find((a) => a.clickToCallKey === body.api_key) ?? null;
      this.requests.push({ method: 'POST', path: url.pathname, authorized: acc !== null });
      if (!acc) return this.json(res, 401, { success: false, message: 'Invalid api key' });
      const failure = this.failures.get(acc.clickToCallKey);
      if (failure) {
        this.failures.delete(acc.clickToCallKey);
        return this.json(res, failure.status, { success: false, message: failure.message });
      }
      if (Number(body.async) !== 1) return this.json(res, 400, { success: false, message: 'async must be 1' });
      if (!body.customer_number) return this.json(res, 422, { success: false, message: 'customer_number is required' });
      const dial: SmartfloDial = { account: acc, body, customIdentifier: typeof body.custom_identifier === 'string' ? body.custom_identifier : null };
      this.dials.push(dial);
      this.json(res, 200, { success: true, message: 'Originate successfully queued' });
      this.emit('dial', dial);
      return;
    }
    if (url.pathname === '/v1/call/options' && req.method === 'POST') {
      // Call Operations: type 4 = transfer to `intercom` (mobile number, extension or department)
      const acc = this.byToken(req);
      this.requests.push({ method: 'POST', path: url.pathname, authorized: acc !== null });
      if (!acc) return this.json(res, 401, { success: false, message: 'Unauthenticated.' });
      if (String(body.type) !== '4' || typeof body.call_id !== 'string' || !body.intercom) return this.json(res, 422, { success: false, message: 'type, call_id and intercom are required' });
      this.transfers.push({ callId: body.call_id, intercom: body.intercom });
      return this.json(res, 200, { success: true, message: 'Call transferred successfully' });
    }
    if (url.pathname === '/v1/call/hangup' && req.method === 'POST') {
      const acc = this.byToken(req);
      this.requests.push({ method: 'POST', path: url.pathname, authorized: acc !== null });
      if (!acc) return this.json(res, 401, { success: false, message: 'Unauthenticated.' });
      this.hangups.push({ callId: body.call_id });
      return this.json(res, 200, { success: true, message: 'Call hangup successfully' });
    }
    return this.json(res, 404, { success: false, message: 'Not found' });
  }
}
