// One Whisper decoder (whisper.cpp through @napi-rs/whisper) on a worker thread of the pool in whisper.ts: its
// full() call is synchronous and takes ~0.1 s per second of speech, so it must never run on the event loop.
// Request: 16 kHz mono float samples of one utterance, the initial prompt. Reply: the text.
import { Whisper, WhisperFullParams, WhisperSamplingStrategy } from '@napi-rs/whisper';
import { poolData, poolPort, serveThread } from '../thread-pool.ts';

export interface WhisperRequest {
  samples: Float32Array;
  prompt: string;
}

// Encoder frames (20 ms each) of padding after the utterance. Measured with bench/local-stt-accuracy.ts on its 32
// clips and on 32 other sentences (same voices): 64 → 128 frames took word accuracy from 90.9 to 94.1 % (16 kHz) and
// 67.1 to 77.6 % (8 kHz phone line) on the bench set, 85.6 → 85.6 % and 54.5 → 63.9 % on the other; 96, 160 and
// 200 frames did worse on the phone line, the full 30 s context too (68.0 %). The encoder costs ~1.3 s of audio more
// per utterance.
const AUDIO_CTX_MARGIN = 128;

const { modelPath, threads } = poolData<{ modelPath: string; threads: number }>();

void serveThread<WhisperRequest, string>(poolPort, async () => {
  const whisper = new Whisper(modelPath, { useGpu: false });
  const decode = async ({ samples, prompt }: WhisperRequest): Promise<{ result: string }> => {
    const p = new WhisperFullParams(WhisperSamplingStrategy.Greedy);
    p.language = 'en';
    p.nThreads = threads;
    // without timestamp tokens: 90.9 % word accuracy on bench/local-stt-accuracy's set against 84.5 % with them; on
    // an audio context trimmed to the utterance the decoder then sometimes starts the sentence over ("... at 3? can
    // we move my ..."), which maxTokens bounds and whisper.ts collapses
    p.noTimestamps = true;
    p.singleSegment = true;
    p.noContext = true;
    p.printProgress = false;
    p.printRealtime = false;
    p.printSpecial = false;
    p.suppressBlank = true;
    p.suppressNonSpeechTokens = true;
    p.temperature = 0;
    // the encoder attends only to the utterance (50 frames per second) plus AUDIO_CTX_MARGIN frames of the silence
    // after it, instead of 30 s
    p.audioCtx = Math.min(1500, Math.ceil((samples.length / 16000) * 50) + AUDIO_CTX_MARGIN);
    // at most ~5 tokens per second of audio (fast speech is ~3.5): a decoder stuck repeating itself stops early
    p.maxTokens = Math.ceil((samples.length / 16000) * 5) + 8;
    if (prompt) p.initialPrompt = prompt;
    return { result: whisper.full(p, samples) };
  };
  // warm: the first decode (buffers allocated, weights paged in) happens here, before the helper says it is loaded
  await decode({ samples: new Float32Array(16000 * 1.1), prompt: '' });
  return decode;
});
