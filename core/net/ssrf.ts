// Outbound request guard (SSRF) for every URL an API user supplies (webhooks, inline function tools). Three layers:
// checkUrlLiteral (http/https only, no blocked host names, no non-public literal IPs); checkUrlResolved (plus DNS:
// every address must be public, at validation time); guardedLookup / safeFetch (the same checks when the socket
// opens, so a host that later resolves to 127.0.0.1 — DNS rebinding — is refused at connect time).
// "Public" means ipaddr.js range `unicast`; everything else is refused (private, loopback, link-local, CGNAT,
// multicast, reserved/documentation ranges, unique-local, ...). IPv4-mapped IPv6 is unwrapped and judged as IPv4;
// NAT64, 6to4 and Teredo forms are refused outright.
// Policy (Config): OUTBOUND_ALLOW_HOSTS — host names, IPs or CIDRs reachable although not public (e.g. 127.0.0.1
// for local fakes in tests, an intranet CRM); OUTBOUND_BLOCK_HOSTS — host names (sub-domains included), IPs or CIDRs
// always refused. `localhost` and `*.localhost` are refused unless allow-listed.
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import type { Config } from '../config.ts';

export interface OutboundPolicy {
  allowHosts: string[];
  blockHosts: string[];
}

const splitList = (v: string | undefined): string[] =>
  (v ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0);

export function policyFromConfig(config: Pick<Config, 'OUTBOUND_ALLOW_HOSTS' | 'OUTBOUND_BLOCK_HOSTS'>): OutboundPolicy {
  return { allowHosts: splitList(config.OUTBOUND_ALLOW_HOSTS), blockHosts: splitList(config.OUTBOUND_BLOCK_HOSTS) };
}

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

/** Parse an address, unwrapping IPv4-mapped IPv6 (::ffff:a.b.c.d) to IPv4. null when not an IP. */
function parseIp(ip: string): Addr | null {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (!ipaddr.isValid(bare)) return null;
  // ipaddr accepts some non-canonical IPv4 forms (e.g. "1"); only trust what node also calls an IP.
  if (net.isIP(bare.split('%')[0] ?? '') === 0) return null;
  try {
    const a = ipaddr.parse(bare);
    if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) return (a as ipaddr.IPv6).toIPv4Address();
    return a;
  } catch {
    return null;
  }
}

/** Does a policy entry (IP, CIDR) cover this address? Host-name entries never match an address. */
function entryMatchesAddress(entry: string, addr: Addr): boolean {
  if (entry.includes('/')) {
    try {
      const [range, bits] = ipaddr.parseCIDR(entry);
      const target = range.kind() === 'ipv4' && addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
        ? (addr as ipaddr.IPv6).toIPv4Address()
        : addr;
      if (target.kind() !== range.kind()) return false;
      return target.match([range, bits] as [Addr, number]);
    } catch {
      return false;
    }
  }
  const other = parseIp(entry);
  if (!other || other.kind() !== addr.kind()) return false;
  return other.toNormalizedString() === addr.toNormalizedString();
}

function hostMatches(entry: string, host: string): boolean {
  return host === entry || host.endsWith(`.${entry}`);
}

function normaliseHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

function isAllowedHost(host: string, policy: OutboundPolicy): boolean {
  const h = normaliseHost(host);
  const addr = parseIp(h);
  return policy.allowHosts.some((e) => (addr ? entryMatchesAddress(e, addr) : !e.includes('/') && !parseIp(e) && h === e));
}

/** True when connecting to `ip` must be refused (non-public address not covered by the allow list, or block-listed). */
export function isBlockedAddress(ip: string, policy?: OutboundPolicy): boolean {
  const addr = parseIp(ip);
  if (!addr) return true; // not an address at all: refuse rather than guess
  if (policy?.allowHosts.some((e) => entryMatchesAddress(e, addr))) return false;
  if (policy?.blockHosts.some((e) => entryMatchesAddress(e, addr))) return true;
  return addr.range() !== 'unicast';
}

/** Host-name level check (no DNS). null = fine. */
function checkHost(hostRaw: string, policy: OutboundPolicy): string | null {
  const host = normaliseHost(hostRaw);
  if (!host) return 'URL has no host';
  if (isAllowedHost(host, policy)) return null;
  const addr = parseIp(host);
  if (addr) return isBlockedAddress(host, policy) ? `address ${host} is not a public address` : null;
  if (host === 'localhost' || host.endsWith('.localhost')) return `host '${host}' is not allowed`;
  if (policy.blockHosts.some((e) => !e.includes('/') && !parseIp(e) && hostMatches(e, host))) return `host '${host}' is blocked`;
  return null;
}

/** Syntax-level check of an outbound URL. null = OK, else a human reason. */
export function checkUrlLiteral(url: string, policy: OutboundPolicy): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'URL is not valid';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'URL scheme must be http or https';
  return checkHost(u.hostname, policy);
}

const LOOKUP_TIMEOUT_MS = 3000;

async function lookupAll(host: string): Promise<dns.LookupAddress[] | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      dns.promises.lookup(host, { all: true, verbatim: true }),
      new Promise<null>((resolve) => { timer = setTimeout(() => resolve(null), LOOKUP_TIMEOUT_MS); }),
    ]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Literal check plus DNS resolution: every address the host resolves to must pass isBlockedAddress. A host that does
 * not resolve (or not within 3 s) is accepted here — it is no SSRF target now, and the connect-time check
 * (guardedLookup) refuses it later if it starts resolving to a private address.
 */
export async function checkUrlResolved(url: string, policy: OutboundPolicy): Promise<string | null> {
  const literal = checkUrlLiteral(url, policy);
  if (literal) return literal;
  const host = normaliseHost(new URL(url).hostname);
  if (parseIp(host) || isAllowedHost(host, policy)) return null;
  const addresses = await lookupAll(host);
  if (!addresses) return null;
  const bad = addresses.find((a) => isBlockedAddress(a.address, policy));
  return bad ? `host '${host}' resolves to ${bad.address}, which is not a public address` : null;
}

/**
 * A refusal of a URL at save time, with what the operator can do about it: a private, loopback or intranet host is
 * reachable once OUTBOUND_ALLOW_HOSTS lists it (a block-listed one once OUTBOUND_BLOCK_HOSTS no longer does).
 */
export function explainRefusal(reason: string): string {
  if (/is blocked$/.test(reason)) return `${reason} by OUTBOUND_BLOCK_HOSTS`;
  if (/not a public address|is not allowed$/.test(reason)) {
    return `${reason}: the host is private (loopback, private network or intranet) and requests are sent to public hosts only; list it in OUTBOUND_ALLOW_HOSTS to allow it`;
  }
  return reason;
}

export class OutboundBlockedError extends Error {
  readonly code = 'ERR_OUTBOUND_BLOCKED';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `net.connect({lookup})`-compatible resolver that refuses non-public answers at connect time (DNS rebinding).
 * Host names on the allow list resolve unchecked.
 */
export function guardedLookup(policy: OutboundPolicy) {
  return function lookup(hostname: string, options: dns.LookupOptions | number | LookupCallback, callback?: LookupCallback): void {
    const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
    const opts: dns.LookupOptions = typeof options === 'function' ? {} : typeof options === 'number' ? { family: options } : options;
    const hostProblem = checkHost(hostname, policy);
    if (hostProblem) {
      cb(new OutboundBlockedError(`outbound request refused: ${hostProblem}`), opts.all ? [] : '', undefined);
      return;
    }
    const allowed = isAllowedHost(hostname, policy);
    dns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) {
        cb(err, opts.all ? [] : '', undefined);
        return;
      }
      const list = addresses as dns.LookupAddress[];
      const bad = allowed ? undefined : list.find((a) => isBlockedAddress(a.address, policy));
      if (bad) {
        cb(new OutboundBlockedError(`outbound request refused: host '${hostname}' resolves to ${bad.address}, which is not a public address`), opts.all ? [] : '', undefined);
        return;
      }
      if (opts.all) {
        cb(null, list);
        return;
      }
      const first = list[0];
      if (!first) {
        const e: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        e.code = 'ENOTFOUND';
        cb(e, '', undefined);
        return;
      }
      cb(null, first.address, first.family);
    });
  };
}

const agents = new WeakMap<OutboundPolicy, Agent>();

/** One keep-alive dispatcher per policy whose every connection (redirects included) goes through the guard. */
function agentFor(policy: OutboundPolicy): Agent {
  let agent = agents.get(policy);
  if (agent) return agent;
  const base = buildConnector({ lookup: guardedLookup(policy) as unknown as typeof dns.lookup });
  agent = new Agent({
    connect(opts, cb) {
      // net.connect skips `lookup` for literal IPs, so judge them here.
      const problem = checkHost(opts.hostname, policy);
      if (problem) {
        cb(new OutboundBlockedError(`outbound request refused: ${problem}`), null);
        return;
      }
      base(opts, cb);
    },
  });
  agents.set(policy, agent);
  return agent;
}

/**
 * fetch() for user-supplied URLs: literal check first (scheme, host), then every connection it opens (including
 * redirect hops) re-checks the resolved address; aborts after timeoutMs (headers and body).
 * Rejects with OutboundBlockedError (possibly wrapped as `cause` of a TypeError) when the target is refused.
 */
export async function safeFetch(url: string, init: RequestInit & { policy: OutboundPolicy; timeoutMs: number }): Promise<Response> {
  const { policy, timeoutMs, signal, ...rest } = init;
  const problem = checkUrlLiteral(url, policy);
  if (problem) throw new OutboundBlockedError(`outbound request refused: ${problem}`);
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const res = await undiciFetch(url, {
    ...(rest as Record<string, unknown>),
    signal: combined,
    dispatcher: agentFor(policy),
  } as Parameters<typeof undiciFetch>[1]);
  return res as unknown as Response;
}
