// Worker side of the WebRTC codec pool (codec-pool.ts), a child process (or a worker thread): holds the CallCodec
// (Opus encoder and decoder state, resamplers) of every call pinned to this worker and runs one batch per message. Messages in:
// {t:'batch', open: ids, calls: [{id, pcm?, ops?}], close: ids}; out: {t:'done', calls: [{id, packets?, pcm?,
// corrupt?}]} in the order of the batch. A call's state never leaves this worker.
import { parentPort } from 'node:worker_threads';
import { CallCodec, type DecodeOp } from './call-codec.ts';
import { opusBackend } from '../../core/audio/opus.ts';

export interface BatchIn {
  t: 'batch';
  open: number[];
  calls: Array<{ id: number; pcm?: Int16Array; ops?: DecodeOp[] }>;
  close: number[];
}
export interface Hello {
  t: 'hello';
  backend: 'native' | 'wasm';
}
export interface BatchOut {
  t: 'done';
  calls: Array<{ id: number; packets?: Uint8Array[]; pcm?: Int16Array; corrupt?: number }>;
}

// a child process talks over its IPC channel (advanced serialization: typed arrays travel as such); a thread over its port
const send = (m: BatchOut | Hello, transfer: ArrayBuffer[] = []): void => {
  if (parentPort) parentPort.postMessage(m, transfer);
  else process.send!(m);
};
const port = parentPort ?? process;
const codecs = new Map<number, CallCodec>();
// which Opus build this worker loaded (the pool reports it; the benchmark and tests compare it with the inline one)
send({ t: 'hello', backend: opusBackend() });

port.on('message', (msg: BatchIn | { t: 'crash' }) => {
  if (msg.t === 'crash') throw new Error('codec thread crash requested'); // tests: a thread that dies mid-call
  for (const id of msg.open) codecs.set(id, new CallCodec());
  const out: BatchOut['calls'] = [];
  const transfer: ArrayBuffer[] = [];
  for (const c of msg.calls) {
    const codec = codecs.get(c.id);
    if (!codec) continue;
    const r: BatchOut['calls'][number] = { id: c.id };
    if (c.pcm) {
      r.packets = codec.encode(c.pcm);
      for (const p of r.packets) transfer.push(p.buffer as ArrayBuffer);
    }
    if (c.ops) {
      const d = codec.decode(c.ops);
      // a fresh array we own (concat of one part returns that part, itself a fresh resampler output)
      r.pcm = d.pcm;
      r.corrupt = d.corrupt;
      transfer.push(d.pcm.buffer as ArrayBuffer);
    }
    out.push(r);
  }
  for (const id of msg.close) codecs.delete(id);
  if (out.length) send({ t: 'done', calls: out }, transfer);
});

// a child process whose parent went away (crash, kill -9) ends too
if (!parentPort) process.on('disconnect', () => process.exit(0));
