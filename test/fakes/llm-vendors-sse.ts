// Local fakes of two more LLM streaming APIs, speaking their real wire formats (vendors.md):
//  - Anthropic Messages (POST /v1/messages, `event:` + `data:` SSE records: message_start, content_block_start,
//    content_block_delta (text_delta / input_json_delta), content_block_stop, message_delta, message_stop, ping);
//  - Google Gemini (POST /v1beta/models/{model}:streamGenerateContent?alt=sse, each record a whole response
//    chunk with candidates[0].content.parts, finishReason, usageMetadata; no [DONE]).
// Non-streaming requests (Anthropic without `stream: true`, Gemini :generateContent) get the vendor's whole
// response object: Anthropic a `message` with text and tool_use blocks, Gemini a GenerateContentResponse.
// Scriptable per request; every request is recorded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenFake, recordRequest, streamRecords, type RecordedRequest } from './http-fake.ts';

export interface VendorReply {
  text?: string[];
  toolCalls?: { id: string; name: string; argumentFragments: string[] }[];
  usage?: { input: number; output: number; cacheRead?: number };
  status?: number;
  errorBody?: unknown;
  /** Anthropic only: an in-stream `error` event after the text */
  streamError?: { type: string; message: string };
  /** non-streaming answers: the stop reason to report (Anthropic stop_reason, Gemini finishReason) */
  stopReason?: string;
  /** stop writing after this many records and keep the socket open */
  stallAfter?: number;
}

export interface FakeVendor {
  url: string;
  requests: RecordedRequest[];
  reply(...r: VendorReply[]): void;
  clientAborts: number;
  close(): Promise<void>;
}

async function serve(kind: 'anthropic' | 'google'): Promise<FakeVendor> {
  const queue: VendorReply[] = [];
  const requests: RecordedRequest[] = [];
  const state = { clientAborts: 0 };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await recordRequest(req, requests);
    const r = queue.shift() ?? { text: ['Hello.'] };
    if (r.status) {
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify(r.errorBody ?? { error: { message: 'error' } }));
      return;
    }
    const streaming = kind === 'anthropic' ? body?.stream === true : !/:generateContent\b/.test(req.url ?? '');
    if (!streaming) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(kind === 'anthropic' ? anthropicMessage(r, body) : geminiResponse(r)));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const records: string[] = [];
    if (kind === 'anthropic') {
      const ev = (type: string, data: object) => records.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      ev('message_start', { message: { id: 'msg_fake', type: 'message', role: 'assistant', model: body?.model, content: [], stop_reason: null, usage: { input_tokens: r.usage?.input ?? 10, output_tokens: 1, cache_read_input_tokens: r.usage?.cacheRead ?? 0, cache_creation_input_tokens: 0 } } });
      let index = 0;
      if (r.text?.length) {
        ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
        ev('ping', {});
        for (const t of r.text) ev('content_block_delta', { index, delta: { type: 'text_delta', text: t } });
        ev('content_block_stop', { index });
        index++;
      }
      if (r.streamError) ev('error', { error: r.streamError });
      for (const tc of r.toolCalls ?? []) {
        ev('content_block_start', { index, content_block: { type: 'tool_use', id: tc.id, name: tc.name, input: {} } });
        ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
        for (const f of tc.argumentFragments) ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: f } });
        ev('content_block_stop', { index });
        index++;
      }
      ev('message_delta', { delta: { stop_reason: r.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: r.usage?.output ?? 5 } });
      ev('message_stop', {});
    } else {
      const rec = (obj: object) => records.push(`data: ${JSON.stringify(obj)}\r\n\r\n`);
      const usage = (final: boolean) => ({ promptTokenCount: r.usage?.input ?? 10, ...(final ? { candidatesTokenCount: r.usage?.output ?? 5, totalTokenCount: (r.usage?.input ?? 10) + (r.usage?.output ?? 5) } : {}), ...(r.usage?.cacheRead ? { cachedContentTokenCount: r.usage.cacheRead } : {}) });
      const texts = r.text ?? [];
      texts.forEach((t, i) => {
        const last = i === texts.length - 1 && !r.toolCalls?.length;
        rec({ candidates: [{ content: { role: 'model', parts: [{ text: t }] }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }], usageMetadata: usage(last), modelVersion: body ? 'gemini-fake' : '' });
      });
      if (r.toolCalls?.length)
        rec({ candidates: [{ content: { role: 'model', parts: r.toolCalls.map((tc) => ({ functionCall: { name: tc.name, args: JSON.parse(tc.argumentFragments.join('') || '{}') } })) }, finishReason: 'STOP', index: 0 }], usageMetadata: usage(true) });
    }
    await streamRecords(res, records, { stallAfter: r.stallAfter, onAbort: () => void state.clientAborts++ });
  };
  const server = await listenFake(handle);
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    reply: (...r) => void queue.push(...r),
    get clientAborts() {
      return state.clientAborts;
    },
    close: server.close,
  };
}

function anthropicMessage(r: VendorReply, body: any) {
  const content: object[] = [];
  if (r.text?.length) content.push({ type: 'text', text: r.text.join('') });
  for (const tc of r.toolCalls ?? []) content.push({ type: 'tool_use', id: tc.id, name: tc.name, input: JSON.parse(tc.argumentFragments.join('') || '{}') });
  return {
    id: 'msg_fake', type: 'message', role: 'assistant', model: body?.model, content,
    stop_reason: r.stopReason ?? (r.toolCalls?.length ? 'tool_use' : 'end_turn'), stop_sequence: null,
    usage: { input_tokens: r.usage?.input ?? 10, output_tokens: r.usage?.output ?? 5, cache_read_input_tokens: r.usage?.cacheRead ?? 0, cache_creation_input_tokens: 0 },
  };
}

function geminiResponse(r: VendorReply) {
  const input = r.usage?.input ?? 10;
  const output = r.usage?.output ?? 5;
  return {
    candidates: [{ content: { role: 'model', parts: [{ text: (r.text ?? []).join('') }] }, finishReason: r.stopReason ?? 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: input, candidatesTokenCount: output, totalTokenCount: input + output, ...(r.usage?.cacheRead ? { cachedContentTokenCount: r.usage.cacheRead } : {}) },
    modelVersion: 'gemini-fake',
  };
}

export const startFakeAnthropic = () => serve('anthropic');
export const startFakeGemini = () => serve('google');
