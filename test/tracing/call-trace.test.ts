// OpenTelemetry traces of one call, end to end, into a local OTLP/HTTP receiver (protobuf, decoded with the
// official OTLP protobuf definitions shipped in @opentelemetry/otlp-transformer): the api request that created the
// call (continuing the caller's traceparent) → the media session of the call (context carried on the call row)
// with its turn and stage spans → the post-call workflow (context in the Temporal headers) → its activities. Every
// span carries the caller's trace id and every parent is a span of the same trace.
import test from 'ava';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { flushTracing, initTracing, tracingEnabled } from '../../core/tracing.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { postCallWorkflowId } from '../../workflows/post-call/messages.ts';
import { endedRow, TestCaller } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { fakeEngines } from '../fakes/engines.ts';
import { until } from '../helpers/wait.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';

const require = createRequire(import.meta.url);
// the OTLP protobuf messages as generated from opentelemetry-proto by the OpenTelemetry project
const otlp = require('@opentelemetry/otlp-transformer/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(b: Uint8Array): ExportRequest } } } } } };
};
interface ExportRequest {
  resourceSpans: {
    resource?: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: { traceId: Uint8Array; spanId: Uint8Array; parentSpanId?: Uint8Array; name: string; attributes: { key: string; value: { stringValue?: string; intValue?: unknown } }[] }[] }[];
  }[];
}
interface Got { traceId: string; spanId: string; parent: string; name: string; service: string; attrs: Record<string, string> }

const QUEUE = 'tracing-call';
const hex = (b?: Uint8Array) => (b && b.length ? Buffer.from(b).toString('hex') : '');
const spans: Got[] = [];
let receiver: http.Server;
let s: TestServer;
let worker: RunningWorker;

const factory: EngineFactory = async () => {
  const e = fakeEngines({ stt: { utterances: ['what are your opening hours'] }, llm: [{ text: 'We are open from nine to five.', firstTokenMs: 20 }] });
  Object.defineProperties(e.engines.llm, { provider: { value: 'openai' } });
  return e;
};

test.before(async () => {
  // tracing is off until an endpoint is given
  await initTracing({ endpoint: undefined, serviceName: 'x' });
  if (tracingEnabled()) throw new Error('tracing on without an endpoint');
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const msg = otlp.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.decode(body);
      for (const rs of msg.resourceSpans) {
        const service = rs.resource?.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) {
          for (const sp of ss.spans) {
            const attrs = Object.fromEntries(sp.attributes.map((a) => [a.key, String(a.value.stringValue ?? a.value.intValue ?? '')]));
            spans.push({ traceId: hex(sp.traceId), spanId: hex(sp.spanId), parent: hex(sp.parentSpanId), name: sp.name, service, attrs });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  // before the Temporal client and worker exist: they add their interceptors when tracing is on
  await initTracing({ endpoint, serviceName: 'voice-agent-test' });
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE, OPENAI_API_KEY: 'sk-trace-test', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, media: { engines: factory } });
  worker = await startTestWorker(s, QUEUE);
});

test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await new Promise((r) => receiver?.close(r));
});

test('one call: api request → media session (turns, stages) → post-call workflow → activities, one trace', async (t) => {
  const { apiKey } = await s.createOrg();
  const traceId = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const created = await s.request('POST', '/call', {
    key: apiKey,
    headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
    body: { agent: { name: 'Traced', llm: { provider: 'openai', model: 'gpt-4.1-mini' }, stt: { provider: 'local' }, tts: { provider: 'local' }, greeting: { firstMessages: ['Hello, how can I help?'] } } },
  });
  t.is(created.status, 200, JSON.stringify(created.body));
  const callId: string = created.body.callId;

  const caller = TestCaller.connect(s.origin, callId, apiKey);
  await caller.oneTurn(/nine to five/);
  const ended = await endedRow(s.db, callId);
  t.is(ended.logs.latency.length, 1);
  // media hands off to post-call after the row is written: wait for the workflow to exist, then for its end
  const handle = s.temporal!.client.workflow.getHandle(postCallWorkflowId(callId));
  await until(() => handle.describe().then(() => true, () => false), { what: 'post-call workflow started', timeoutMs: 20_000 });
  await handle.result();
  await flushTracing();

  const mine = () => spans.filter((x) => x.traceId === traceId);
  const byName = (re: RegExp) => mine().filter((x) => re.test(x.name));
  await until(() => byName(/^RunActivity:/).length > 0 && byName(/^call\.session$/).length > 0 && byName(/^RunWorkflow:/).length > 0, { what: 'spans exported', timeoutMs: 20_000 });

  const [api] = byName(/^POST .*\/call$/);
  t.truthy(api, `api span among ${mine().map((x) => x.name).join(', ')}`);
  t.is(api!.parent, callerSpan, 'the api span continues the caller traceparent');
  t.is(api!.attrs['http.response.status_code'], '200');

  const [session] = byName(/^call\.session$/);
  t.is(session!.parent, api!.spanId, 'the media session continues the request that created the call');
  t.is(session!.attrs['call.id'], callId);
  t.is(session!.attrs['call.ended_reason'], 'user_hangup');
  const [turn] = byName(/^call\.turn$/);
  t.is(turn!.parent, session!.spanId);
  t.is(turn!.attrs['llm.provider'], 'openai');
  const stages = mine().filter((x) => x.parent === turn!.spanId).map((x) => x.name).sort();
  t.deepEqual(stages, ['llm', 'stt', 'tts']);
  t.is(mine().find((x) => x.name === 'llm' && x.parent === turn!.spanId)!.attrs.provider, 'openai');

  // Temporal: the hand-off under the session, the workflow under the hand-off, activities under the workflow
  const [handOff] = byName(/^SignalWithStartWorkflow:postCallWorkflow$/);
  t.is(handOff!.parent, session!.spanId);
  const [wf] = byName(/^RunWorkflow:postCallWorkflow$/);
  t.is(wf!.parent, handOff!.spanId);
  const runs = byName(/^RunActivity:/);
  const starts = new Map(byName(/^StartActivity:/).map((x) => [x.spanId, x]));
  for (const r of runs) t.is(starts.get(r.parent)?.parent, wf!.spanId, `${r.name} runs under the workflow`);

  // one tree: every span's parent is in the trace, up to the caller's span
  const ids = new Set(mine().map((x) => x.spanId));
  for (const x of mine()) t.true(x.parent === callerSpan || ids.has(x.parent), `${x.name} has its parent in the trace`);
  t.true(mine().every((x) => x.service === 'voice-agent-test'));
});
