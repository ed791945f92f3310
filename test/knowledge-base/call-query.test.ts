// End to end: a PDF uploaded through POST /files is ingested by the workflow, then a live call's `query` tool
// (the fake LLM issues the tool call) answers from it through real retrieval; the LLM's next request carries the
// passage from the document.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { ScenarioBook } from '../media/session/scenarios.ts';
import { buildPdf, upload, waitProcessed } from './helpers.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';

const QUEUE = 'kb-call-query-test';
const book = new ScenarioBook();
let s: TestServer;
let worker: RunningWorker;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE }, media: { engines: book.factory } });
  worker = await startTestWorker(s, QUEUE);
  org = await s.createOrg();
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
});

test("a call's query tool answers from an uploaded PDF", async (t) => {
  const pdf = await buildPdf([
    'Opening hours. The Harbour dental practice is open Monday to Thursday from nine to five.',
    'Emergencies. For a dental emergency at the weekend call the on-duty line, which answers within fifteen minutes.',
  ]);
  const up = await upload(s, [{ name: 'file', value: pdf, filename: 'practice.pdf' }], org.apiKey);
  t.is(up.status, 201);
  const done = await waitProcessed(s, up.body.id, org.apiKey);
  t.is(done.status, 'completed');

  const name = book.add({
    stt: { utterances: ['what do I do in an emergency on saturday'] },
    llm: [
      { toolCalls: [{ name: 'practice_faq', arguments: '{"query":"dental emergency at the weekend"}' }] },
      { text: 'Call the on-duty line; they answer within fifteen minutes.' },
    ],
  });
  const config = agentConfig({
    name,
    tools: [{ type: 'query', name: 'practice_faq', description: 'Practice FAQ', config: { knowledgeBases: [{ name: 'practice', description: 'Practice facts', documentIds: [done.id] }] } }],
  });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet();
  await caller.speak(400);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /on-duty line/.test(e.payload!.text), 20_000);
  caller.close();
  await endedRow(s.db, callId);

  const second = book.engines(name).engines.llm.requests[1]!;
  const toolResult = second.messages.find((m) => m.role === 'tool' && (m as { name?: string }).name === 'practice_faq') as { content: string } | undefined;
  t.truthy(toolResult);
  t.regex(toolResult!.content, /on-duty line, which answers within fifteen minutes/);
  t.notRegex(toolResult!.content, /still being processed/);
});
