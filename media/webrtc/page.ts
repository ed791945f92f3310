// The browser call page: GET /call (and its assets under /call/), plain files from media/webrtc/page/ — no build step.
// Served by the media process next to the signaling endpoints it talks to (deploy/Caddyfile routes /call there).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { staticPageHandler } from '../../core/http-static.ts';

export const CALL_PAGE_PATH = '/call';

export const callPageHandler = staticPageHandler({
  path: CALL_PAGE_PATH,
  dir: path.join(path.dirname(fileURLToPath(import.meta.url)), 'page'),
  // the page talks only to its own origin; the microphone is the only powerful feature it uses
  csp: "default-src 'self'; connect-src 'self'; media-src 'self' blob: mediastream: https: http:; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
  permissions: 'microphone=(self)',
});
