// bench/agents: latency of POST /agents (full validation: schema, catalog, languages, saved-tool lookup, inline URL
// check, insert) and PATCH /agents/{uuid} (row lock, merge, re-validation, update) through the real HTTP stack
// (auth + rate limit included), p50/p99. Baseline in the same run: GET /healthz (no auth, no database) and
// GET /agents/{uuid} (auth + one indexed read). Sequential requests, one connection at a time.
//
//   node_modules/.bin/tsx bench/agents.ts           (or: npm run bench -- agents)
//   ITER=2000 node_modules/.bin/tsx bench/agents.ts
import { performance } from 'node:perf_hooks';
import { createDb } from '../core/db/pool.ts';
import { createApiKey, createOrganization, setOrganizationLimits } from '../core/orgs.ts';
import { startScratchDatabase } from '../scripts/infra.ts';
import { startBenchServer } from './_server.ts';
import { pct } from './_stats.ts';

const ITER = Number(process.env.ITER ?? 500);
const WARMUP = 50;
const log = (m: string) => process.stdout.write(`${m}\n`);

const scratch = await startScratchDatabase({ prefix: 'vas-bench-agents-' });
let exitCode = 0;
try {
  const db = await createDb(scratch.url, { maximumPoolSize: 10 });
  const { server, port } = await startBenchServer(scratch, db);
  const origin = `http://127.0.0.1:${port}`;
  const base = `${origin}/api/v1`;
  const org = await createOrganization(db, { name: 'bench', balanceUsd: 100 });
  await setOrganizationLimits(db, org.id, { ratePerMinute: 100_000_000 });
  const { key } = await createApiKey(db, org.id, 'bench');
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };

  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${url} → ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : null;
  };

  // A realistic agent: a saved tool reference, inline tools (function URL checked), context variables, webhook.
  const tool = await call('POST', `${base}/tools`, { name: 'CRM lookup', definition: { type: 'function', config: { method: 'GET', url: 'https://crm.example.com/{id}' } } });
  const agentBody = (i: number) => ({
    name: `Bench agent ${i}`,
    languages: ['en', 'hi'],
    systemPrompt: 'You are a helpful receptionist for {{company}}. Today is {{current_date}}.',
    llm: { provider: 'openai', model: 'gpt-4.1-mini', temperature: 0.6 },
    stt: { provider: 'soniox', soniox: { contextTerms: 'Acme, Widget' } },
    tts: { provider: 'elevenlabs', elevenlabs: { stability: 0.4 } },
    greeting: { firstMessages: ['Hi, this is Acme. How can I help?'] },
    webhook: { url: 'https://hooks.example.com/acme', headers: { 'X-Env': 'bench' } },
    contextVariables: { company: 'Acme' },
    tools: [
      tool.tool_uuid,
      { type: 'function', name: 'check_order', config: { server: { url: 'https://93.184.216.34/orders/{{order}}' }, parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] } } },
      { type: 'transferCall', name: 'to_human', config: { destination: '+14155550100' } },
    ],
  });
  const target = await call('POST', `${base}/agents`, agentBody(0));
  const patches = [
    { greeting: { interruptible: true } },
    { llm: { temperature: 0.3 } },
    { stt: { soniox: { maxEndpointDelayMs: 1500 } } },
    { tts: { elevenlabs: { speed: 1.1 } } },
    { contextVariables: { company: 'Acme Corp' } },
  ];

  async function measure(name: string, fn: (i: number) => Promise<unknown>): Promise<{ name: string; p50: number; p99: number; mean: number }> {
    for (let i = 0; i < WARMUP; i++) await fn(i);
    const samples: number[] = [];
    for (let i = 0; i < ITER; i++) {
      const t0 = performance.now();
      await fn(i);
      samples.push(performance.now() - t0);
    }
    return { name, p50: pct(samples, 50), p99: pct(samples, 99), mean: samples.reduce((a, b) => a + b, 0) / samples.length };
  }

  const healthz = await measure('GET /healthz (baseline: no auth, no db)', () => fetch(`${origin}/healthz`).then((r) => r.text()));
  const get = await measure('GET /agents/{uuid} (baseline: auth + 1 read)', () => call('GET', `${base}/agents/${target.uuid}`));
  const post = await measure('POST /agents', (i) => call('POST', `${base}/agents`, agentBody(i + 1)));
  const patch = await measure('PATCH /agents/{uuid}', (i) => call('PATCH', `${base}/agents/${target.uuid}`, patches[i % patches.length]));

  log(`iterations per endpoint: ${ITER} (after ${WARMUP} warm-up), sequential`);
  log('endpoint                                          p50 ms   p99 ms  mean ms  p50 vs healthz  p50 vs GET agent');
  for (const r of [healthz, get, post, patch]) {
    log(`${r.name.padEnd(48)} ${r.p50.toFixed(2).padStart(7)}  ${r.p99.toFixed(2).padStart(7)}  ${r.mean.toFixed(2).padStart(7)}  ${(r.p50 / healthz.p50).toFixed(1).padStart(13)}x  ${(r.p50 / get.p50).toFixed(1).padStart(15)}x`);
  }
  await server.close();
  await db.end();
} catch (err) {
  process.stderr.write(`${(err as Error).stack}\n`);
  exitCode = 1;
} finally {
  await scratch.stop();
}
process.exit(exitCode);
