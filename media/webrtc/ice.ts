// WEBRTC_ICE_SERVERS: STUN/TURN servers for the server's peer connections and for browsers (returned with the answer
// and by GET /api/v1/webrtc/ice-servers). Default: none — the service never contacts a public STUN server by itself.
//
// Format: a JSON array of RTCIceServer objects ({urls, username?, credential?}), or a comma-separated list of
// URLs where TURN credentials ride in the userinfo: `stun:stun.example.com:3478,turn:user:pass@turn.example.com:3478?transport=tcp`.
import type { IceServer as NdcIceServer } from 'node-datachannel';

export interface BrowserIceServer {
  urls: string[];
  username?: string;
  credential?: string;
}

export class IceConfigError extends Error {}

const URL_RE = /^(stuns?|turns?):(?:([^:@\s]+):([^@\s]+)@)?(\[[0-9a-f:]+\]|[^:?\s/@]+)(?::(\d{1,5}))?(?:\?transport=(udp|tcp))?$/i;

export function parseIceServers(raw: string | undefined): BrowserIceServer[] {
  const text = (raw ?? '').trim();
  if (!text) return [];
  if (text.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new IceConfigError('WEBRTC_ICE_SERVERS: not valid JSON');
    }
    if (!Array.isArray(parsed)) throw new IceConfigError('WEBRTC_ICE_SERVERS: expected a JSON array');
    return parsed.map((s, i) => {
      const o = s as { urls?: unknown; username?: unknown; credential?: unknown };
      const urls = typeof o.urls === 'string' ? [o.urls] : Array.isArray(o.urls) ? o.urls : null;
      if (!urls || !urls.length || !urls.every((u) => typeof u === 'string' && URL_RE.test(u))) {
        throw new IceConfigError(`WEBRTC_ICE_SERVERS[${i}].urls: expected stun:/stuns:/turn:/turns: URLs`);
      }
      return {
        urls: urls as string[],
        ...(typeof o.username === 'string' ? { username: o.username } : {}),
        ...(typeof o.credential === 'string' ? { credential: o.credential } : {}),
      };
    });
  }
  return text.split(',').map((u) => u.trim()).filter(Boolean).map((u) => {
    const m = URL_RE.exec(u);
    if (!m) throw new IceConfigError(`WEBRTC_ICE_SERVERS: '${u.replace(/\/\/.*@|:[^:@]*@/, ':***@')}' is not a stun:/turn: URL`);
    const [, scheme, user, pass, host, port, transport] = m;
    const url = `${scheme}:${host}${port ? `:${port}` : ''}${transport ? `?transport=${transport}` : ''}`;
    return { urls: [url], ...(user ? { username: decodeURIComponent(user), credential: decodeURIComponent(pass!) } : {}) };
  });
}

/** The same servers in node-datachannel's form (TURN over TLS for turns:, over TCP for ?transport=tcp). */
export function toNdcIceServers(servers: readonly BrowserIceServer[]): NdcIceServer[] {
  const out: NdcIceServer[] = [];
  for (const s of servers) {
    for (const u of s.urls) {
      const m = URL_RE.exec(u);
      if (!m) continue;
      const [, scheme, , , host, port, transport] = m;
      const hostname = host!.replace(/^\[|\]$/g, '');
      const secure = scheme!.toLowerCase().endsWith('s');
      const turn = scheme!.toLowerCase().startsWith('turn');
      const p = port ? Number(port) : secure ? 5349 : 3478;
      if (!turn) {
        out.push({ hostname, port: p });
        continue;
      }
      out.push({
        hostname,
        port: p,
        ...(s.username ? { username: s.username } : {}),
        ...(s.credential ? { password: s.credential } : {}),
        relayType: secure ? 'TurnTls' : transport?.toLowerCase() === 'tcp' ? 'TurnTcp' : 'TurnUdp',
      });
    }
  }
  return out;
}

/** WEBRTC_PORT_RANGE "min-max" → [min, max]. */
export function parsePortRange(raw: string | undefined): { begin: number; end: number } | null {
  if (!raw) return null;
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(raw.trim());
  if (!m) throw new IceConfigError('WEBRTC_PORT_RANGE: expected "min-max", e.g. 40000-40100');
  const begin = Number(m[1]);
  const end = Number(m[2]);
  if (begin < 1024 || end > 65535 || begin > end) throw new IceConfigError('WEBRTC_PORT_RANGE: ports must satisfy 1024 <= min <= max <= 65535');
  return { begin, end };
}
