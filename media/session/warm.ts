// Process start: load what every call needs before the first call arrives, so the first caller after a start or a
// deploy does not pay for model loading: the Silero VAD model (and one inference), the noise-gate thread with
// RNNoise's WASM module, and (outside tests) the local STT's recogniser pools (Whisper decoder helpers; PocketSphinx
// with the base vocabulary's model), the local TTS's synthesizers (Piper helpers, eSpeak NG workers), the Smart
// Turn end-of-turn model's helpers and the local LLM's model when `npm run setup:llm` installed it (node-llama-cpp,
// shared by every call of the process).
import type { Config } from '../../core/config.ts';
import type { Logger } from '../../core/logger.ts';
import { warmNoiseGateThread } from '../noise/threaded.ts';
import { warmLocalStt } from '../services/stt/local.ts';
import { sharedEspeakPool } from '../services/tts/espeak-pool.ts';
import { whisperPool } from '../services/stt/whisper.ts';
import { piperPool } from '../services/tts/piper.ts';
import { preloadLocalModel } from '../services/llm/llama.ts';
import { smartTurnPool } from '../services/turn/smart-turn.ts';
import { warmVad } from '../vad/index.ts';

export async function warmMedia(config: Config, logger: Logger): Promise<void> {
  const t0 = performance.now();
  const [vad, noise, stt, tts, whisper, piper, turn, llm] = await Promise.allSettled([
    warmVad(),
    warmNoiseGateThread(),
    config.NODE_ENV === 'test'
      ? Promise.resolve(false)
      : warmLocalStt({ ...(config.LOCAL_STT_PYTHON ? { python: config.LOCAL_STT_PYTHON } : {}), ...(config.LOCAL_STT_WORKERS ? { workers: config.LOCAL_STT_WORKERS } : {}) }),
    config.NODE_ENV === 'test'
      ? Promise.resolve(null)
      : sharedEspeakPool({ ...(config.LOCAL_TTS_PYTHON ? { python: config.LOCAL_TTS_PYTHON } : {}), ...(config.LOCAL_TTS_WORKERS ? { workers: config.LOCAL_TTS_WORKERS } : {}) }),
    // the neural local engines (default models of `local`): their model files verified and loaded in every helper
    config.NODE_ENV === 'test' ? Promise.resolve(null) : whisperPool(config.LOCAL_STT_WORKERS ? { workers: config.LOCAL_STT_WORKERS } : {}),
    config.NODE_ENV === 'test' ? Promise.resolve(null) : piperPool(config.LOCAL_TTS_WORKERS ? { workers: config.LOCAL_TTS_WORKERS } : {}),
    config.NODE_ENV === 'test' ? Promise.resolve(null) : smartTurnPool(config.LOCAL_TURN_WORKERS ? { workers: config.LOCAL_TURN_WORKERS } : {}),
    config.NODE_ENV === 'test' ? Promise.resolve(null) : preloadLocalModel(),
  ]);
  for (const [what, r] of [
    ['Whisper (local STT; PocketSphinx is used instead)', whisper],
    ['Piper voice (local TTS; eSpeak NG is used instead)', piper],
    ['Smart Turn (end-of-turn model; turns end on VAD silence alone)', turn],
    ['Qwen model (local LLM; the demo responder is used instead)', llm],
  ] as const)
    if (r.status === 'rejected' && config.NODE_ENV !== 'test') logger.warn({ err: (r.reason as Error).message }, `${what} cannot run`);
  for (const [what, r] of [['vad', vad], ['noise gate', noise]] as const) if (r.status === 'rejected') logger.warn({ err: r.reason }, `could not preload the ${what}`);
  logger.info(
    {
      ms: Math.round(performance.now() - t0),
      localStt: stt.status === 'fulfilled' && stt.value,
      localTtsPool: tts.status === 'fulfilled' && tts.value !== null,
      whisper: whisper.status === 'fulfilled' && whisper.value !== null,
      piper: piper.status === 'fulfilled' && piper.value !== null,
      smartTurn: turn.status === 'fulfilled' && turn.value !== null,
      llm: llm.status === 'fulfilled' ? llm.value : false,
    },
    'media engines preloaded',
  );
}
