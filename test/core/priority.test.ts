// core/priority.ts in a child process of its own (the test runner's priority is left alone): the media process's
// pacing thread raised by MEDIA_PRIORITY_BOOST, a worker thread started afterwards back at the original priority,
// 0 = no change; without the permission, nothing changes and the reason says why.
import test from 'ava';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const priorityUrl = new URL('../../core/priority.ts', import.meta.url).href;
const priority = fileURLToPath(priorityUrl);

function probe(boost: number): Promise<{ base: number; outcome: { applied: boolean; nice: number; reason?: string }; main: number; worker: number; child: number }> {
  const script = `
    import os from 'node:os';
    import { spawn } from 'node:child_process';
    import { Worker } from 'node:worker_threads';
    import { raiseAudioThreadPriority, resetChildPriority } from ${JSON.stringify(priority)};
    const base = os.getPriority(0);
    const outcome = raiseAudioThreadPriority(${boost});
    const code = 'import os from "node:os"; import { parentPort } from "node:worker_threads"; import { resetHelperPriority } from ' + JSON.stringify(${JSON.stringify(priorityUrl)}) + '; resetHelperPriority(); parentPort.postMessage(os.getPriority(0));';
    const w = new Worker(new URL('data:text/javascript,' + encodeURIComponent(code)));
    const sleeper = spawn('sleep', ['30']);
    resetChildPriority(sleeper.pid);
    const child = os.getPriority(sleeper.pid);
    sleeper.kill();
    w.once('message', (worker) => {
      console.log(JSON.stringify({ base, outcome, main: os.getPriority(0), worker, child }));
      process.exit(0);
    });
  `;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim())))),
  );
}

test('the pacing thread is raised by the boost (at most to -20), a thread or process started afterwards goes back to the original priority', async (t) => {
  const r = await probe(5);
  const want = Math.max(-20, r.base - 5);
  if (!r.outcome.applied) {
    // not permitted here (no CAP_SYS_NICE, e.g. root in a container without it): nothing changed, and the reason
    // names the permission (or says the thread is already at the top)
    t.regex(r.outcome.reason ?? '', want === r.base ? /highest priority/ : /CAP_SYS_NICE/);
    t.is(r.main, r.base);
    t.is(r.worker, r.base);
    t.is(r.child, r.base);
    return;
  }
  t.is(r.outcome.nice, want);
  t.is(r.main, want, 'the main thread runs raised');
  t.is(r.worker, r.base, 'a worker started afterwards is back at the original priority');
  t.is(r.child, r.base, 'a process spawned afterwards is put back at the original priority');
});

test('MEDIA_PRIORITY_BOOST 0 changes nothing', async (t) => {
  const r = await probe(0);
  t.false(r.outcome.applied);
  t.is(r.main, r.base);
  t.is(r.worker, r.base);
  t.is(r.child, r.base);
});

test('MEDIA_PRIORITY_BOOST unset: the media process raises its pacing thread by the default levels where permitted, and only notes it where not', async (t) => {
  const script = `
    import os from 'node:os';
    import { applyMediaPriority, DEFAULT_BOOST } from ${JSON.stringify(priority)};
    const base = os.getPriority(0);
    const said = [];
    const outcome = applyMediaPriority({}, { info: (_o, m) => said.push(['info', m]), warn: (_o, m) => said.push(['warn', m]) });
    console.log(JSON.stringify({ base, outcome, main: os.getPriority(0), said, boost: DEFAULT_BOOST }));
  `;
  const r = await new Promise<{ base: number; outcome: { applied: boolean; nice: number }; main: number; said: [string, string][]; boost: number }>((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim())))));
  t.is(r.boost, 10);
  if (r.outcome.applied) {
    t.is(r.main, Math.max(-20, r.base - 10));
    t.deepEqual(r.said, [['info', 'audio pacing thread priority raised (MEDIA_PRIORITY_BOOST)']]);
  } else {
    t.is(r.main, r.base);
    t.deepEqual(r.said.map(([level]) => level), ['info'], 'a note, not a warning');
  }
});
