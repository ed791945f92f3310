// The media service: owns every live audio connection (WebSocket audio, WebRTC signalling, carrier streams).
// It plugs into an HTTP server as upgrade handlers and plain HTTP handlers.
import type { HttpHandler, UpgradeHandler } from '../core/http-server.ts';
import type { MediaDeps } from './deps.ts';

export interface MediaService {
  upgrade: UpgradeHandler[];
  http: HttpHandler[];
  /** Live calls on this process (reported in /metrics and used when draining). */
  activeCalls(): number;
  /** Stop accepting new calls; resolves when active calls have ended or graceMs passed. */
  drain(graceMs: number): Promise<void>;
  close(): Promise<void>;
}

export function createMediaService(_deps: MediaDeps): MediaService {
  return {
    upgrade: [],
    http: [],
    activeCalls: () => 0,
    drain: async () => {},
    close: async () => {},
  };
}
