// deploy/Caddyfile sends some paths to the media process (the `@media` matcher) and everything else to api. Every
// path it sends to media must be one media actually serves (an HTTP or WebSocket-upgrade handler claims it), so the
// proxy config never advertises live-media endpoints (WebRTC signalling, carrier streams) before they exist.
import test from 'ava';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { startServer } from '../../../core/http-server.ts';
import { startTestServer, type TestServer } from '../../helpers/server.ts';

const CALL = '7b0b7f5e-0000-4000-8000-000000000000';
/** A concrete request path under each media prefix the proxy may name (extend when media serves a new prefix). */
const SAMPLE_PATHS: Record<string, string> = {
  '/api/v1/ws/*': `/api/v1/ws/audio/${CALL}`,
  '/api/v1/webrtc/*': `/api/v1/webrtc/offer/${CALL}`,
  '/call': '/call',
  '/call/*': '/call/app.js',
  '/api/v1/telephony/twilio/stream/*': `/api/v1/telephony/twilio/stream/${CALL}`,
  '/api/v1/telephony/smartflo/stream/*': `/api/v1/telephony/smartflo/stream/1`,
  '/api/v1/telephony/plivo/stream/*': `/api/v1/telephony/plivo/stream/${CALL}`,
  '/api/v1/telephony/telnyx/stream/*': `/api/v1/telephony/telnyx/stream/${CALL}`,
  '/api/v1/telephony/vonage/stream/*': `/api/v1/telephony/vonage/stream/${CALL}`,
  '/api/v1/telephony/exotel/stream/*': `/api/v1/telephony/exotel/stream/${CALL}`,
};

function mediaMatchers(): string[] {
  const caddy = readFileSync(new URL('../../../deploy/Caddyfile', import.meta.url), 'utf8');
  const line = caddy.split('\n').find((l) => /^\s*@media\s+path\s/.test(l));
  if (!line) throw new Error('deploy/Caddyfile has no `@media path` matcher');
  return line.trim().split(/\s+/).slice(2);
}

let s: TestServer;
test.before(async () => {
  s = await startTestServer({ temporal: false });
});
test.after.always(async () => {
  await s?.close();
});

test('every path deploy/Caddyfile routes to media is served by media', async (t) => {
  const claimed = new Set<string>();
  const pathOf = (req: IncomingMessage) => new URL(req.url ?? '/', 'http://x').pathname;
  const { media } = s.combined;
  // media's own handlers only; whatever they do not claim falls through (api is not mounted here)
  const server = await startServer({
    http: media.http.map((h) => (req, res) => (h(req, res) ? (claimed.add(pathOf(req)), true) : false)),
    upgrade: media.upgrade.map((h) => (req, socket, head) => (h(req, socket, head) ? (claimed.add(pathOf(req)), true) : false)),
    fallback: (_req, res) => {
      res.statusCode = 404;
      res.end();
    },
  }, 0, '127.0.0.1');
  t.teardown(() => server.close(0));
  const origin = `127.0.0.1:${server.port}`;

  const matchers = mediaMatchers();
  t.true(matchers.length > 0);
  for (const m of matchers) {
    const sample = SAMPLE_PATHS[m];
    if (!sample) {
      t.fail(`no sample path for media prefix ${m}: add one to SAMPLE_PATHS`);
      continue;
    }
    await fetch(`http://${origin}${sample}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }).then((r) => r.arrayBuffer()).catch(() => undefined);
    await new Promise<void>((resolve) => {
      const ws = new WebSocket(`ws://${origin}${sample}`);
      ws.on('error', () => resolve());
      ws.on('close', () => resolve());
      ws.on('unexpected-response', (_req, res) => {
        res.resume();
        resolve();
      });
      ws.on('open', () => ws.close());
    });
    t.true(claimed.has(sample), `${m} is routed to media by deploy/Caddyfile but media does not serve ${sample}`);
  }
});
