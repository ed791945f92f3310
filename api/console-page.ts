// The operator console: GET /console (and its assets under /console/), plain files from api/console/ — no build
// step. It reads the REST API of the same origin with the API key kept in the browser (like the call page /call);
// recordings come from {cdn_url}, which may be another origin (an S3 bucket), so that origin is allowed too.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticPageHandler } from '../core/http-static.ts';
import type { ApiDeps } from './deps.ts';

export const CONSOLE_PATH = '/console';

export function consolePageHandler(deps: Pick<ApiDeps, 'storage'>) {
  let cdn = '';
  try {
    cdn = ` ${new URL(deps.storage.publicUrl('recordings/x.wav')).origin}`;
  } catch { /* a storage without public URLs: same origin only */ }
  return staticPageHandler({
    path: CONSOLE_PATH,
    dir: path.join(path.dirname(fileURLToPath(import.meta.url)), 'console'),
    csp: `default-src 'self'; connect-src 'self'${cdn}; media-src 'self' blob:${cdn}; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'`,
  });
}
