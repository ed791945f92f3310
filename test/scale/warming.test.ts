// A media node starting with the neural local engines (Whisper, Piper, Smart Turn) takes no new calls until they
// have loaded: its first callers would otherwise wait seconds for a greeting. Meanwhile /readyz answers 503
// `warming` and its media_nodes row says not accepting (so POST /call answers 503 with Retry-After, as for a full
// node); once the engines are loaded it is ready and accepting.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { neuralLocalEnginesInstalled } from '../../media/services/model-files.ts';
import { createTestDb } from '../helpers/db.ts';
import { killServiceProcesses, startServiceProcess } from '../helpers/processes.ts';
import { until } from '../helpers/wait.ts';

test.after.always(killServiceProcesses);

(neuralLocalEnginesInstalled() ? test : test.skip)('a starting node takes no calls until its neural engines have loaded: /readyz warming, not accepting, then ready', async (t) => {
  t.timeout(180_000);
  const { db, url } = await createTestDb();
  try {
    // outside NODE_ENV=test: the production start, engines loaded at process start
    const media = await startServiceProcess('media/main.ts', { DATABASE_URL: url, NODE_ENV: 'development', SIGNING_SECRET: 'warming-test-signing-secret-0123' }, { listenTimeoutMs: 120_000 });
    const readyz = async () => {
      const r = await fetch(`${media.origin}/readyz`);
      return { status: r.status, body: (await r.json()) as { status: string; capacity: number } };
    };
    // the port opens before the engine helpers have started, let alone loaded their models
    const first = await readyz();
    t.deepEqual([first.status, first.body.status], [503, 'warming']);
    const accepting = () => db.maybeOneFirst(sql.type(z.object({ accepting: z.boolean() }))`SELECT accepting FROM media_nodes`);
    t.is(await until(async () => ((await accepting()) === false ? 'not accepting' : null), { what: 'the first report, not accepting', timeoutMs: 30_000 }), 'not accepting');
    const ready = await until(async () => { const r = await readyz(); return r.status === 200 ? r.body : null; }, { what: 'the node ready', timeoutMs: 150_000, everyMs: 200 });
    t.is(ready.status, 'ready');
    t.true(await until(() => accepting(), { what: 'the node reported accepting', timeoutMs: 10_000 }));
  } finally {
    await db.end();
  }
});
