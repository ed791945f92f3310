// bench/agent-test: how long an agent-test run of 6 turns takes on the local engines of this machine — the agent
// (Silero VAD, Whisper tiny.en, Piper, Qwen2.5 0.5B) in media, the simulated caller (Whisper, Piper, Qwen) and the
// judge (Qwen with a JSON-schema grammar) in the worker, api + media + worker in this one process with a scratch
// PostgreSQL and a Temporal dev server. Per run: wall time from POST …/runs to the run's end, split into queueing and
// the call's setup (run queued → first agent line heard), the conversation (first → last line), and the end (last
// line → run ended: the caller hangs up, the judge scores); the turns the caller had and how it ended. The baseline,
// measured in the same run on the same engines: the same test in text mode (no audio: the LLMs alone).
// Figures depend on machine load: the load average is printed beside them.
//   node_modules/.bin/node --import tsx bench/agent-test.ts           RUNS=2 TURNS=6 ANSWER_TIMEOUT_S=180
import os from 'node:os';
import path from 'node:path';
import { createWorker } from '../activities/worker.ts';
import { loadConfig } from '../core/config.ts';
import { createDb } from '../core/db/pool.ts';
import { createLogger } from '../core/logger.ts';
import { createApiKey, createOrganization } from '../core/orgs.ts';
import { createStorage } from '../core/storage/index.ts';
import { connectTemporal } from '../core/temporal.ts';
import { modelInstalled } from '../media/services/model-files.ts';
import { freePort, startScratchDatabase, startTemporalDev } from '../scripts/infra.ts';
import { startCombined } from '../scripts/server.ts';
import { pct } from './_stats.ts';

const RUNS = Number(process.env.RUNS ?? 2);
const TURNS = Number(process.env.TURNS ?? 6);
const QUEUE = 'bench-agent-test';
/** the agent's silence after the caller's turn that ends a run `error` (a shared machine answers slowly) */
const ANSWER_TIMEOUT_S = Number(process.env.ANSWER_TIMEOUT_S ?? 180);
const log = (s: string) => process.stdout.write(`${s}\n`);
const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' / ');

for (const m of ['whisper-tiny.en', 'piper-en_US-joe-medium', 'qwen2.5-coder-0.5b-instruct'] as const) {
  if (!(await modelInstalled(m))) {
    log(`bench/agent-test needs the local model ${m} (npm run setup:llm installs Qwen; scripts/setup.sh the others)`);
    process.exit(1);
  }
}

const scratch = await startScratchDatabase({ prefix: 'vas-bench-agent-test-' });
const temporal = await startTemporalDev({ headless: true, port: 0 });
const logger = createLogger({ level: 'silent' });
let exitCode = 0;
try {
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: scratch.url, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: path.join(scratch.dir, 'data'),
    SIGNING_SECRET: 'bench-signing-secret-0123456789', LOG_LEVEL: 'silent', TEMPORAL_ADDRESS: temporal.address, TEMPORAL_TASK_QUEUE: QUEUE,
  });
  const db = await createDb(scratch.url, { maximumPoolSize: 20 });
  const th = await connectTemporal(temporal.address, 'default');
  const storage = createStorage(config);
  const server = await startCombined({ config, db, logger, temporal: th, storage }, port, '127.0.0.1');
  const { worker, connection } = await createWorker({ config, db, logger, taskQueue: QUEUE, storage });
  const running = worker.run();
  const org = await createOrganization(db, { name: 'bench', balanceUsd: 100 });
  const key = (await createApiKey(db, org.id, 'bench')).key;
  const base = `http://127.0.0.1:${port}/api/v1`;
  const req = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${base}${p}`, { method, headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    return { status: res.status, body: (await res.json()) as any };
  };

  const agent = await req('POST', '/agents', {
    name: 'Sunny Bakery',
    systemPrompt: 'You answer the phone for Sunny Bakery. Open 7am to 3pm every day. Cakes from 20 dollars, delivery in town for 5 dollars, cards and cash accepted. Answer in one short sentence.',
    greeting: { firstMessages: ['Hello, this is Sunny Bakery. How can I help you?'] },
    llm: { provider: 'local', model: 'qwen2.5-coder-0.5b-instruct', maxTokens: 60 }, stt: { provider: 'local' }, tts: { provider: 'local' },
    // on a shared machine the caller's model may think longer than the default idle timeout
    userIdleTimeoutS: 25, userIdleMaxRetries: 5,
  });
  if (agent.status !== 201) throw new Error(`agent: ${JSON.stringify(agent.body)}`);
  const uuid = agent.body.uuid;
  const test = await req('POST', `/agents/${uuid}/tests`, {
    name: 'Party order',
    scenario: 'You are planning a birthday party. Ask, one question at a time: the price of a cake, delivery, opening hours, how to pay, and whether they write names on cakes. Do not say goodbye before you have asked all of them.',
    criteria: ['The agent greets the caller', 'The agent says what a cake costs', 'The agent answers about delivery'],
    maxTurns: TURNS, maxDurationS: 1800, answerTimeoutS: ANSWER_TIMEOUT_S,
  });
  if (test.status !== 201) throw new Error(`test: ${JSON.stringify(test.body)}`);

  const runOnce = async (mode: 'audio' | 'text') => {
    const t0 = Date.now();
    const started = await req('POST', `/agents/${uuid}/tests/${test.body.id}/runs`, { mode });
    if (started.status !== 202) throw new Error(`run: ${JSON.stringify(started.body)}`);
    for (;;) {
      await new Promise((r) => setTimeout(r, 500));
      const r = await req('GET', `/agents/${uuid}/tests/${test.body.id}/runs/${started.body.id}`);
      if (!['passed', 'failed', 'error'].includes(r.body.status)) continue;
      const run = r.body;
      const ms = (iso: string | null) => (iso ? Date.parse(iso) : NaN);
      const lines = run.transcript as Array<{ role: string; at: string }>;
      const first = ms(lines[0]?.at ?? null);
      const last = ms(lines.at(-1)?.at ?? null);
      return {
        mode, status: run.status as string, endedBy: run.endedBy as string | null, error: run.error as string | null,
        turns: lines.filter((l) => l.role === 'caller').length,
        totalS: (Date.now() - t0) / 1000,
        setupS: (first - ms(run.createdAt)) / 1000,
        conversationS: (last - first) / 1000,
        endS: (ms(run.endedAt) - last) / 1000,
      };
    }
  };

  log(`machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), load average at start ${load()} (other processes share these cores)`);
  const results: Array<Awaited<ReturnType<typeof runOnce>>> = [];
  // a warm-up text run loads the model in this process, so the first audio run is not charged for it
  await runOnce('text');
  for (let i = 0; i < RUNS; i++) {
    for (const mode of ['audio', 'text'] as const) {
      const r = await runOnce(mode);
      results.push(r);
      log(`${mode.padEnd(5)} run ${i + 1}: ${r.status}${r.error ? ` (${r.error})` : ''}, ${r.turns} caller turns, ended by ${r.endedBy}; total ${r.totalS.toFixed(1)} s = setup ${r.setupS.toFixed(1)} + conversation ${r.conversationS.toFixed(1)} + end ${r.endS.toFixed(1)} s (load ${load()})`);
    }
  }
  for (const mode of ['audio', 'text'] as const) {
    const rs = results.filter((r) => r.mode === mode);
    const total = rs.map((r) => r.totalS);
    const perTurn = rs.filter((r) => r.turns > 0).map((r) => r.conversationS / r.turns);
    log(`${mode}: ${rs.length} runs, total median ${pct(total, 50).toFixed(1)} s (min ${Math.min(...total).toFixed(1)}, max ${Math.max(...total).toFixed(1)}); conversation per caller turn median ${perTurn.length ? pct(perTurn, 50).toFixed(1) : '—'} s`);
  }
  const a = results.filter((r) => r.mode === 'audio').map((r) => r.totalS);
  const t = results.filter((r) => r.mode === 'text').map((r) => r.totalS);
  log(`audio / text (baseline, same engines, same run): ${(pct(a, 50) / pct(t, 50)).toFixed(2)}x`);
  log(`load average at end ${load()}`);

  worker.shutdown();
  await running;
  await connection.close();
  await server.close();
  await th.close();
  await db.end();
} catch (err) {
  log(`bench failed: ${(err as Error).stack ?? err}`);
  exitCode = 1;
} finally {
  await temporal.stop();
  await scratch.stop();
}
process.exit(exitCode);
