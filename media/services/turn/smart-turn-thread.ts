// One Smart Turn v3.2 classifier (onnxruntime-node) in a helper process of the pool in smart-turn.ts: the inference
// is synchronous and takes tens of milliseconds, so it never runs on the media process's event loop. The
// requests that queue up while one batch runs go through the model as one batch (serveBatches).
// Request: the turn's audio (16 kHz mono s16le, at most its last 8 s). Reply: the probability that the turn is
// complete, and this helper's CPU time per decision (features and inference).
import * as ort from 'onnxruntime-node';
import { whisperLogMel } from '../../audio/log-mel.ts';
import { poolData, poolPort, serveBatches } from '../thread-pool.ts';
import { modelWindow } from './window.ts';

export interface SmartTurnRequest {
  pcm: Int16Array;
}
export interface SmartTurnReply {
  probability: number;
  cpuMs: number;
}

const FRAMES = 800;
const MELS = 80;
const { modelPath } = poolData<{ modelPath: string }>();

void serveBatches<SmartTurnRequest, SmartTurnReply>(poolPort, async () => {
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const run = async (reqs: SmartTurnRequest[]): Promise<SmartTurnReply[]> => {
    const c0 = process.cpuUsage();
    const b = reqs.length;
    const input = new Float32Array(b * MELS * FRAMES);
    reqs.forEach((r, i) => input.set(whisperLogMel(modelWindow(r.pcm)), i * MELS * FRAMES));
    const out = await session.run({ input_features: new ort.Tensor('float32', input, [b, MELS, FRAMES]) });
    const p = (out[session.outputNames[0]!]!.data as Float32Array).slice();
    const c = process.cpuUsage(c0);
    const cpuMs = (c.user + c.system) / 1000 / b;
    return reqs.map((_, i) => ({ probability: p[i]!, cpuMs }));
  };
  // warm: the first inference (buffers allocated, weights paged in) happens before the helper says it is loaded
  await run([{ pcm: new Int16Array(16000) }]);
  return run;
});
