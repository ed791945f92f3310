// Smart Turn v3.2 (pipecat-ai, BSD-2-Clause): an 8 MB ONNX classifier over Whisper-tiny log-mel features of the last
// 8 s of the caller's turn that says whether the turn sounds finished. It is the end-of-turn model of the `local`
// STT and of every STT vendor without an end of turn of its own (media/services/index.ts). The model file comes from
// the pipecat-ai wheel, installed and hash-checked by setup (model-files.ts); it is verified again before it is
// loaded, and a missing or altered file makes ready() reject (the call's turns then end on VAD silence alone).
// Decisions run on a process-wide pool of helper processes (smart-turn-thread.ts; LOCAL_TURN_WORKERS, default one
// per core): features and inference off the event loop, the requests waiting at a helper run as one batch.
import { MODELS, verifiedModelFile } from '../model-files.ts';
import { poolSize, SharedPool, ThreadPool } from '../thread-pool.ts';
import type { TurnDecision, TurnModel } from '../types.ts';
import type { SmartTurnReply, SmartTurnRequest } from './smart-turn-thread.ts';

export const SMART_TURN_ID = 'smart-turn-v3.2';
/** "complete" above this probability (the threshold pipecat uses) */
const THRESHOLD = 0.5;

const pool = new SharedPool<SmartTurnRequest, SmartTurnReply>();

export interface SmartTurnOptions {
  workers?: number;
  /** where the model files are (default model-files.ts modelsDir()) */
  modelsDir?: string;
}

/** The shared pool with the verified model loaded in every helper; rejects when it cannot run here. */
export async function smartTurnPool(opts: SmartTurnOptions = {}): Promise<ThreadPool<SmartTurnRequest, SmartTurnReply>> {
  const modelPath = await verifiedModelFile(MODELS[SMART_TURN_ID].files[0]!, opts.modelsDir);
  return pool.get(modelPath, () =>
    new ThreadPool<SmartTurnRequest, SmartTurnReply>(new URL('./smart-turn-thread.ts', import.meta.url), { modelPath }, poolSize('LOCAL_TURN_WORKERS', opts.workers), 'Smart Turn'));
}

export async function closeSmartTurn(): Promise<void> {
  await pool.close();
}

/** A call's handle on the shared Smart Turn pool (cheap: the pool is loaded once per process). */
export function createSmartTurn(opts: SmartTurnOptions = {}): TurnModel {
  let loaded: Promise<ThreadPool<SmartTurnRequest, SmartTurnReply>> | null = null;
  const load = () => {
    loaded ??= smartTurnPool(opts);
    loaded.catch(() => (loaded = null));
    return loaded;
  };
  return {
    id: SMART_TURN_ID,
    ready: async () => void (await load()),
    async decide(pcm16k: Int16Array): Promise<TurnDecision> {
      const p = await load();
      const r = await p.run({ pcm: pcm16k });
      return { complete: r.probability > THRESHOLD, probability: r.probability, cpuMs: r.cpuMs };
    },
  };
}
