import test from 'ava';
import http from 'node:http';
import dns from 'node:dns';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import {
  checkUrlLiteral,
  checkUrlResolved,
  guardedLookup,
  isBlockedAddress,
  policyFromConfig,
  safeFetch,
  type OutboundPolicy,
} from '../../core/net/ssrf.ts';

const none: OutboundPolicy = { allowHosts: [], blockHosts: [] };
const defaults = policyFromConfig({ OUTBOUND_ALLOW_HOSTS: '', OUTBOUND_BLOCK_HOSTS: 'metadata.google.internal,metadata,instance-data' });
const allowLoopback = policyFromConfig({ OUTBOUND_ALLOW_HOSTS: '127.0.0.1', OUTBOUND_BLOCK_HOSTS: '' });

test('policyFromConfig splits, trims and lowercases comma lists', (t) => {
  t.deepEqual(policyFromConfig({ OUTBOUND_ALLOW_HOSTS: ' 10.0.0.0/8, CRM.Intranet ,', OUTBOUND_BLOCK_HOSTS: '' }), {
    allowHosts: ['10.0.0.0/8', 'crm.intranet'],
    blockHosts: [],
  });
});

const blocked = [
  '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '127.0.0.1', '127.255.0.9', '169.254.169.254',
  '100.64.0.1', '100.127.255.254', '0.0.0.0', '224.0.0.1', '255.255.255.255', '240.0.0.1', '192.0.2.10',
  '198.18.0.1', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
  '64:ff9b::7f00:1', '2002:7f00:1::', '2001:db8::1', 'not-an-ip',
];
const allowed = ['8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'];

for (const ip of blocked) test(`isBlockedAddress(${ip}) → true`, (t) => t.true(isBlockedAddress(ip), ip));
for (const ip of allowed) test(`isBlockedAddress(${ip}) → false`, (t) => t.false(isBlockedAddress(ip), ip));

test('allow list (IP, CIDR) lets private addresses through; block list CIDR refuses public ones', (t) => {
  t.false(isBlockedAddress('127.0.0.1', allowLoopback));
  t.true(isBlockedAddress('127.0.0.2', allowLoopback));
  t.false(isBlockedAddress('::ffff:127.0.0.1', allowLoopback));
  const cidr = policyFromConfig({ OUTBOUND_ALLOW_HOSTS: '10.0.0.0/8', OUTBOUND_BLOCK_HOSTS: '8.8.8.0/24' });
  t.false(isBlockedAddress('10.200.1.1', cidr));
  t.true(isBlockedAddress('192.168.0.1', cidr));
  t.true(isBlockedAddress('8.8.8.8', cidr));
  t.false(isBlockedAddress('8.8.4.4', cidr));
});

const literalCases: Array<[string, OutboundPolicy, boolean]> = [
  ['https://example.com/hook', defaults, true],
  ['http://93.184.216.34:8080/x', defaults, true],
  ['ftp://example.com/x', defaults, false],
  ['file:///etc/passwd', defaults, false],
  ['gopher://example.com', defaults, false],
  ['not a url', defaults, false],
  ['http://127.0.0.1:9/x', defaults, false],
  ['http://2130706433/', defaults, false], // 127.0.0.1 in decimal
  ['http://0x7f.1/', defaults, false],
  ['http://[::1]/', defaults, false],
  ['http://[::ffff:127.0.0.1]/', defaults, false],
  ['http://169.254.169.254/latest/meta-data', defaults, false],
  ['http://100.64.1.1/', defaults, false],
  ['http://localhost:8080/', defaults, false],
  ['http://LOCALHOST./', defaults, false],
  ['http://api.localhost/', defaults, false],
  ['http://metadata.google.internal/computeMetadata', defaults, false],
  ['http://sub.metadata.google.internal/', defaults, false],
  ['http://metadata/', defaults, false],
  ['http://127.0.0.1:9/x', allowLoopback, true],
  ['http://localhost:9/x', allowLoopback, false],
];
for (const [url, policy, ok] of literalCases) {
  test(`checkUrlLiteral ${url} → ${ok ? 'ok' : 'refused'}`, (t) => {
    const r = checkUrlLiteral(url, policy);
    if (ok) t.is(r, null);
    else t.true(typeof r === 'string' && r.length > 0, String(r));
  });
}

test('checkUrlResolved refuses localhost and a host name resolving to a loopback address', async (t) => {
  t.regex((await checkUrlResolved('http://localhost/', none)) ?? '', /not allowed/);
  // The machine's own host name resolves to a local address on this box (checked, not assumed).
  const name = os.hostname();
  const addrs = await dns.promises.lookup(name, { all: true }).catch(() => []);
  if (addrs.length > 0 && addrs.every((a) => isBlockedAddress(a.address))) {
    t.regex((await checkUrlResolved(`http://${name}:8080/`, none)) ?? '', /resolves to .*not a public address/);
    // allow-listing the resolved address lets it through
    const policy = { allowHosts: addrs.map((a) => a.address), blockHosts: [] };
    t.is(await checkUrlResolved(`http://${name}:8080/`, policy), null);
  }
  t.is(await checkUrlResolved('http://127.0.0.1:1/', allowLoopback), null);
  t.truthy(await checkUrlResolved('http://10.0.0.1/', allowLoopback));
  // a name that does not resolve is not an SSRF target now (connect time re-checks)
  t.is(await checkUrlResolved('https://no-such-host.invalid/x', none), null);
});

test('guardedLookup refuses non-public answers and honours all/family options', async (t) => {
  const lookup = guardedLookup(none);
  const err = await new Promise<Error | null>((resolve) => lookup('localhost', {}, (e) => resolve(e)));
  t.regex(err?.message ?? '', /refused/);
  const open = guardedLookup({ allowHosts: ['localhost'], blockHosts: [] });
  const res = await new Promise<unknown>((resolve, reject) => open('localhost', { all: true }, (e, a) => (e ? reject(e) : resolve(a))));
  t.true(Array.isArray(res) && res.length > 0);
  const single = await new Promise<[unknown, unknown]>((resolve, reject) => open('localhost', { family: 4 }, (e, a, f) => (e ? reject(e) : resolve([a, f]))));
  t.deepEqual(single, ['127.0.0.1', 4]);
});

async function server(handler: http.RequestListener) {
  const srv = http.createServer(handler);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, port: (srv.address() as AddressInfo).port };
}

test('safeFetch: loopback refused by default, allowed by the allow list; aborts after timeoutMs', async (t) => {
  const a = await server((req, res) => {
    if (req.url === '/slow') return; // never answers
    res.end('hello');
  });
  try {
    await t.throwsAsync(safeFetch(`http://127.0.0.1:${a.port}/`, { policy: none, timeoutMs: 2000 }), { message: /refused/ });
    const ok = await safeFetch(`http://127.0.0.1:${a.port}/`, { policy: allowLoopback, timeoutMs: 2000 });
    t.is(ok.status, 200);
    t.is(await ok.text(), 'hello');
    const err = await safeFetch(`http://127.0.0.1:${a.port}/slow`, { policy: allowLoopback, timeoutMs: 200 }).then(() => null, (e: Error) => e);
    t.truthy(err);
    t.regex(`${err?.name} ${err?.message}`, /abort|timeout/i);
  } finally {
    a.srv.closeAllConnections();
    a.srv.close();
  }
});

test('safeFetch re-checks at connect time: a name resolving to loopback, and a redirect to a literal private IP', async (t) => {
  const target = await server((_req, res) => res.end('secret'));
  const bouncer = await server((_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${target.port}/` });
    res.end();
  });
  try {
    // allow-list the *name* localhost only: the name resolves, but the redirect hop to the literal 127.0.0.1 is refused
    const policy: OutboundPolicy = { allowHosts: ['localhost'], blockHosts: [] };
    const direct = await safeFetch(`http://localhost:${bouncer.port}/`, { policy, timeoutMs: 2000, redirect: 'manual' });
    t.is(direct.status, 302);
    const followed = await safeFetch(`http://localhost:${bouncer.port}/`, { policy, timeoutMs: 2000 }).then(() => null, (e: Error) => e);
    t.truthy(followed);
    t.regex(`${followed?.message} ${(followed?.cause as Error | undefined)?.message}`, /refused/);
    // host name that resolves to loopback at connect time
    const name = os.hostname();
    const addrs = await dns.promises.lookup(name, { all: true }).catch(() => []);
    if (addrs.some((a) => a.address === '127.0.0.1') && addrs.every((a) => isBlockedAddress(a.address))) {
      const e = await safeFetch(`http://${name}:${target.port}/`, { policy: none, timeoutMs: 2000 }).then(() => null, (x: Error) => x);
      t.regex(`${e?.message} ${(e?.cause as Error | undefined)?.message}`, /refused/);
    }
  } finally {
    for (const s of [target, bouncer]) { s.srv.closeAllConnections(); s.srv.close(); }
  }
});
