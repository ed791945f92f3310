// Run an agent's tests from a terminal or a CI job, through the public API:
//   npm run agent-test -- --agent UUID [--test ID] [--mode audio|text] [--url URL] [--key KEY] [--timeout S] [--json]
// The service's address is --url or VOICE_AGENT_URL (default http://localhost:8080), the organization's API key
// --key or VOICE_AGENT_API_KEY. Every test of the agent (or the one named) is run at once; each run's end is printed
// with its verdicts. Exit status: 0 when every run passed, 1 when one failed or ended in error, 2 when the runs could
// not be started (bad arguments, unknown agent or test, a refused key, no tests).
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const USAGE = `usage: npm run agent-test -- --agent UUID [--test ID] [--mode audio|text] [--url URL] [--key KEY] [--timeout SECONDS] [--json]
  --url      the service (default: VOICE_AGENT_URL, else http://localhost:8080)
  --key      the organization's API key (default: VOICE_AGENT_API_KEY)
  --timeout  how long to wait for all runs (default 1800 s)
  --json     print the finished runs as JSON instead of text
exit status: 0 all passed, 1 a run failed or ended in error, 2 the runs could not be started`;

class UsageError extends Error {}

interface Run {
  id: string;
  testId: string;
  status: string;
  mode: string;
  callId: string | null;
  error: string | null;
  endedBy: string | null;
  verdicts: Array<{ criterion: string; passed: boolean; reason: string }>;
}

const TERMINAL = new Set(['passed', 'failed', 'error']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function detail(body: unknown): string {
  const d = (body as { detail?: unknown } | null)?.detail;
  if (typeof d === 'string') return d;
  return JSON.stringify(d ?? body);
}

export async function main(argv: string[], env: Record<string, string | undefined>, print: (line: string) => void, pollMs = 2000): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        agent: { type: 'string' }, test: { type: 'string' }, mode: { type: 'string' }, url: { type: 'string' }, key: { type: 'string' },
        timeout: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
    if (values.help) {
      print(USAGE);
      return 0;
    }
    if (!values.agent || !UUID.test(values.agent)) throw new UsageError('--agent UUID is required');
    if (values.test !== undefined && !UUID.test(values.test)) throw new UsageError('--test must be a test id (a UUID)');
    if (values.mode !== undefined && values.mode !== 'audio' && values.mode !== 'text') throw new UsageError("--mode is 'audio' or 'text'");
    if (values.timeout !== undefined && !(Number(values.timeout) > 0)) throw new UsageError('--timeout is a number of seconds');
  } catch (err) {
    print(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const key = values.key ?? env.VOICE_AGENT_API_KEY;
  if (!key) {
    print(`no API key: pass --key or set VOICE_AGENT_API_KEY\n${USAGE}`);
    return 2;
  }
  const base = `${(values.url ?? env.VOICE_AGENT_URL ?? 'http://localhost:8080').replace(/\/+$/, '').replace(/\/api\/v1$/, '')}/api/v1`;
  const agentPath = `/agents/${values.agent}/tests`;
  const call = async (method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${base}${p}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    return { status: res.status, body: parsed };
  };

  // the tests to run
  let tests: Array<{ id: string; name: string }> = [];
  try {
    if (values.test) {
      const r = await call('GET', `${agentPath}/${values.test}`);
      if (r.status !== 200) throw new Error(`GET test: ${r.status} ${detail(r.body)}`);
      tests = [r.body];
    } else {
      for (let page = 1; ; page++) {
        const r = await call('GET', `${agentPath}?per_page=100&page=${page}`);
        if (r.status !== 200) throw new Error(`GET tests: ${r.status} ${detail(r.body)}`);
        tests.push(...r.body.items);
        if (page >= r.body.totalPages) break;
      }
      if (!tests.length) throw new Error(`agent ${values.agent} has no tests`);
    }
  } catch (err) {
    print((err as Error).message);
    return 2;
  }

  const started: Array<{ test: { id: string; name: string }; run: Run }> = [];
  for (const test of tests) {
    const r = await call('POST', `${agentPath}/${test.id}/runs`, values.mode ? { mode: values.mode } : {});
    if (r.status !== 202) {
      print(`could not start "${test.name}": ${r.status} ${detail(r.body)}`);
      return 2;
    }
    started.push({ test, run: r.body });
    if (!values.json) print(`started  ${test.name}  (run ${r.body.id}, ${r.body.mode})`);
  }

  const deadline = Date.now() + Number(values.timeout ?? 1800) * 1000;
  const done = new Map<string, Run>();
  while (done.size < started.length) {
    if (Date.now() > deadline) {
      print(`timed out: ${started.length - done.size} run(s) still going`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, pollMs));
    for (const { test, run } of started) {
      if (done.has(run.id)) continue;
      const r = await call('GET', `${agentPath}/${test.id}/runs/${run.id}`).catch(() => null);
      if (!r || r.status !== 200 || !TERMINAL.has(r.body.status)) continue;
      const end: Run = r.body;
      done.set(run.id, end);
      if (values.json) continue;
      const passed = end.verdicts.filter((v) => v.passed).length;
      print(`${end.status.toUpperCase().padEnd(6)} ${test.name}  ${end.verdicts.length ? `${passed}/${end.verdicts.length} criteria` : ''}${end.callId ? `  call ${end.callId}` : ''}`);
      for (const v of end.verdicts) print(`         ${v.passed ? '✓' : '✗'} ${v.criterion}${v.passed ? '' : `: ${v.reason}`}`);
      if (end.error) print(`         ${end.error}`);
    }
  }
  const runs = started.map(({ test, run }) => ({ test: test.name, ...done.get(run.id)! }));
  const ok = runs.every((r) => r.status === 'passed');
  if (values.json) print(JSON.stringify({ passed: ok, runs }, null, 2));
  else print(`${runs.filter((r) => r.status === 'passed').length} of ${runs.length} passed`);
  return ok ? 0 : 1;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  main(process.argv.slice(2), process.env, (line) => process.stdout.write(`${line}\n`)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`agent-test: ${(err as Error).message}\n`);
      process.exit(2);
    },
  );
}
