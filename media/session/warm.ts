// Process start: load what every call needs before the first call arrives, so the first caller after a start or a
// deploy does not pay for model loading: the Silero VAD model (and one inference), the noise-gate thread with RNNoise's WASM module, and —
// outside tests — the local STT's recogniser pool with the base vocabulary's model and the local TTS's synthesizers.
import type { Config } from '../../core/config.ts';
import type { Logger } from '../../core/logger.ts';
import { warmNoiseGateThread } from '../noise/threaded.ts';
import { warmLocalStt } from '../services/stt/local.ts';
import { sharedEspeakPool } from '../services/tts/espeak-pool.ts';
import { warmVad } from '../vad/index.ts';

export async function warmMedia(config: Config, logger: Logger): Promise<void> {
  const t0 = performance.now();
  const [vad, noise, stt, tts] = await Promise.allSettled([
    warmVad(),
    warmNoiseGateThread(),
    config.NODE_ENV === 'test'
      ? Promise.resolve(false)
      : warmLocalStt({ ...(config.LOCAL_STT_PYTHON ? { python: config.LOCAL_STT_PYTHON } : {}), ...(config.LOCAL_STT_WORKERS ? { workers: config.LOCAL_STT_WORKERS } : {}) }),
    config.NODE_ENV === 'test'
      ? Promise.resolve(null)
      : sharedEspeakPool({ ...(config.LOCAL_TTS_PYTHON ? { python: config.LOCAL_TTS_PYTHON } : {}), ...(config.LOCAL_TTS_WORKERS ? { workers: config.LOCAL_TTS_WORKERS } : {}) }),
  ]);
  for (const [what, r] of [['vad', vad], ['noise gate', noise]] as const) if (r.status === 'rejected') logger.warn({ err: r.reason }, `could not preload the ${what}`);
  logger.info({ ms: Math.round(performance.now() - t0), localStt: stt.status === 'fulfilled' && stt.value, localTtsPool: tts.status === 'fulfilled' && tts.value !== null }, 'media engines preloaded');
}
