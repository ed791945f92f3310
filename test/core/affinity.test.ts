// core/affinity.ts (MEDIA_PACING_CPU) in a child process of its own (the test runner's CPUs are left alone): the
// pacing thread alone on its CPU, every other thread — those that existed, a worker thread started afterwards — and a
// helper process spawned afterwards on the other CPUs; a CPU the process may not use, or the only one, is refused
// with the reason and changes nothing.
import test from 'ava';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pacingCpuPlan, parseCpuList } from '../../core/affinity.ts';

const affinity = fileURLToPath(new URL('../../core/affinity.ts', import.meta.url));

interface Probe {
  allowed: number[];
  outcome: { applied: boolean; reason?: string; plan?: { pacing: number; others: number[] } } | null;
  warned: string[];
  main: number[];
  /** every thread but the main one, after the worker started and a sweep ran */
  others: number[][];
  threads: number;
  child: number[];
}

function probe(cpu: number | 'last'): Promise<Probe> {
  const script = `
    import { readdirSync } from 'node:fs';
    import { spawn } from 'node:child_process';
    import { Worker } from 'node:worker_threads';
    import { allowedCpus, applyPacingCpu, pacingCpu, placeChildProcess } from ${JSON.stringify(affinity)};
    const allowed = await allowedCpus();
    const cpu = ${JSON.stringify(cpu)} === 'last' ? allowed[allowed.length - 1] : ${JSON.stringify(cpu)};
    const warned = [];
    const outcome = await applyPacingCpu({ MEDIA_PACING_CPU: cpu }, { info: () => {}, warn: (o, m) => warned.push(m + ': ' + (o.reason ?? o.err)) });
    // a thread started after the pin inherits the pacing CPU from the main thread until a sweep moves it
    const w = new Worker('setInterval(() => {}, 1000)', { eval: true });
    await new Promise((ok) => w.once('online', ok));
    const sleeper = spawn('sleep', ['30']);
    placeChildProcess(sleeper.pid);
    await pacingCpu()?.sweep();
    const wantOthers = JSON.stringify(outcome?.plan?.others ?? allowed);
    let child = await allowedCpus(sleeper.pid);
    for (let i = 0; i < 50 && JSON.stringify(child) !== wantOthers; i++) {
      await new Promise((ok) => setTimeout(ok, 100));
      child = await allowedCpus(sleeper.pid);
    }
    // a thread id reads like a process id under /proc (its own status, its own affinity)
    const tids = readdirSync('/proc/self/task').map(Number);
    const main = await allowedCpus(process.pid);
    const others = (await Promise.all(tids.filter((t) => t !== process.pid).map((t) => allowedCpus(t).catch(() => null)))).filter(Boolean);
    sleeper.kill();
    console.log(JSON.stringify({ allowed, outcome, warned, main, others, threads: tids.length, child }));
    process.exit(0);
  `;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim()) as Probe))),
  );
}

test('cpu lists parse as the kernel writes them; the plan keeps the pacing CPU for one thread and the rest for the others', (t) => {
  t.deepEqual(parseCpuList('0-2,5'), [0, 1, 2, 5]);
  t.deepEqual(parseCpuList('1'), [1]);
  t.deepEqual(parseCpuList(''), []);
  t.deepEqual(pacingCpuPlan(1, [0, 1]), { pacing: 1, others: [0] });
  t.deepEqual(pacingCpuPlan(0, [0, 1, 2, 3]), { pacing: 0, others: [1, 2, 3] });
  t.regex((pacingCpuPlan(3, [0, 1]) as { refused: string }).refused, /not one this process may run on \(0,1\)/);
  t.regex((pacingCpuPlan(0, [0]) as { refused: string }).refused, /only one/);
});

test('MEDIA_PACING_CPU: the pacing thread alone on its CPU; other threads, a worker started afterwards and a spawned helper on the others', async (t) => {
  const r = await probe('last');
  if (r.allowed.length < 2) {
    // a one-CPU process has no core to spare: refused, said, nothing moved
    t.false(r.outcome?.applied);
    t.regex(r.outcome?.reason ?? '', /only one/);
    t.deepEqual(r.main, r.allowed);
    return;
  }
  const pacing = r.allowed[r.allowed.length - 1]!;
  const rest = r.allowed.slice(0, -1);
  t.true(r.outcome?.applied, JSON.stringify(r));
  t.deepEqual(r.outcome?.plan, { pacing, others: rest });
  t.deepEqual(r.warned, []);
  t.deepEqual(r.main, [pacing], 'the main thread runs on the pacing CPU only');
  t.true(r.threads > 5, 'V8, libuv and the worker threads were there to place');
  t.is(r.others.length, r.threads - 1);
  for (const cpus of r.others) t.deepEqual(cpus, rest, 'no other thread on the pacing CPU (the worker started after the pin included)');
  t.deepEqual(r.child, rest, 'a helper process spawned from the pacing thread is moved off its CPU');
});

test('MEDIA_PACING_CPU on a CPU the process may not use is refused with the reason, and nothing moves', async (t) => {
  const r = await probe(4095);
  t.false(r.outcome?.applied);
  t.regex(r.outcome?.reason ?? '', /CPU 4095 is not one this process may run on/);
  t.is(r.warned.length, 1);
  t.regex(r.warned[0]!, /MEDIA_PACING_CPU not applied/);
  t.deepEqual(r.main, r.allowed);
  for (const cpus of r.others) t.deepEqual(cpus, r.allowed);
  t.deepEqual(r.child, r.allowed, 'without a placement, a helper keeps the CPUs it inherited');
});
