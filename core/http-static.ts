// Plain browser pages served from a folder of files (no build step): the call page at /call (media) and the
// operator console at /console (api). One handler per page: GET/HEAD of the page path answers index.html, of
// `<path>/<file>` a file of the folder whose name is listed; anything else is not this handler's.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { HttpHandler } from './http-server.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export interface StaticPage {
  /** URL path of the page, e.g. '/call' */
  path: string;
  /** folder holding index.html and its assets */
  dir: string;
  /** Content-Security-Policy of every answer */
  csp: string;
  /** Permissions-Policy, when the page uses a powerful feature */
  permissions?: string;
}

export function staticPageHandler(page: StaticPage): HttpHandler {
  // the folder's own files with a known type, read once at start; never a path from the request
  const files = new Set(readdirSync(page.dir).filter((f) => /^[a-z0-9][a-z0-9_-]*\.[a-z]+$/.test(f) && TYPES[path.extname(f)]));
  const cache = new Map<string, Buffer>();
  const file = (name: string): Buffer => {
    let b = cache.get(name);
    if (!b) {
      b = readFileSync(path.join(page.dir, name));
      if (process.env.NODE_ENV === 'production') cache.set(name, b);
    }
    return b;
  };
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let name: string | null = null;
    if (url.pathname === page.path || url.pathname === `${page.path}/`) name = 'index.html';
    else if (url.pathname.startsWith(`${page.path}/`) && files.has(url.pathname.slice(page.path.length + 1))) name = url.pathname.slice(page.path.length + 1);
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
      'content-security-policy': page.csp,
      ...(page.permissions ? { 'permissions-policy': page.permissions } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}
