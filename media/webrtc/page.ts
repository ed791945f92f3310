// The browser call page: GET /call (and its assets under /call/), plain files from media/web/ — no build step.
// Served by the media process next to the signaling endpoints it talks to (deploy/Caddyfile routes /call there).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpHandler } from '../../core/http-server.ts';

export const CALL_PAGE_PATH = '/call';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'web');
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
const FILES = ['index.html', 'app.js', 'style.css'];
const cache = new Map<string, Buffer>();

function file(name: string): Buffer {
  let b = cache.get(name);
  if (!b) {
    b = readFileSync(path.join(dir, name));
    if (process.env.NODE_ENV === 'production') cache.set(name, b);
  }
  return b;
}

export const callPageHandler: HttpHandler = (req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  let name: string | null = null;
  if (url.pathname === CALL_PAGE_PATH || url.pathname === `${CALL_PAGE_PATH}/`) name = 'index.html';
  else if (url.pathname.startsWith(`${CALL_PAGE_PATH}/`) && FILES.includes(url.pathname.slice(CALL_PAGE_PATH.length + 1))) name = url.pathname.slice(CALL_PAGE_PATH.length + 1);
  if (!name) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'content-type': 'application/json', allow: 'GET, HEAD' }).end('{"detail":"Method Not Allowed"}');
    return true;
  }
  const body = file(name);
  res.writeHead(200, {
    'content-type': TYPES[path.extname(name)] ?? 'application/octet-stream',
    'content-length': body.length,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    // the page talks only to its own origin; the microphone is the only powerful feature it uses
    'content-security-policy': "default-src 'self'; connect-src 'self'; media-src 'self' blob: mediastream: https: http:; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
    'permissions-policy': 'microphone=(self)',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
};
