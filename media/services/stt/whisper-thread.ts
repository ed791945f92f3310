// One Whisper decoder (whisper.cpp through @napi-rs/whisper) in a helper process of the pool in whisper.ts: its
// full() call is synchronous and long, so it must never run on the media process's event loop.
// Request: 16 kHz mono float samples of one utterance, the initial prompt. Reply: the text.
import { Whisper, WhisperFullParams, WhisperSamplingStrategy } from '@napi-rs/whisper';
import { poolData, poolPort, serveThread } from '../thread-pool.ts';

export interface WhisperRequest {
  samples: Float32Array;
  prompt: string;
}

// Encoder frames (20 ms each) of padding after the utterance: the margin with the best word accuracy on
// bench/local-stt-accuracy.ts, above all on the 8 kHz phone line (docs/benchmarks.md).
const AUDIO_CTX_MARGIN = 128;

const { modelPath, threads } = poolData<{ modelPath: string; threads: number }>();

void serveThread<WhisperRequest, string>(poolPort, async () => {
  const whisper = new Whisper(modelPath, { useGpu: false });
  const decode = async ({ samples, prompt }: WhisperRequest): Promise<{ result: string }> => {
    const p = new WhisperFullParams(WhisperSamplingStrategy.Greedy);
    p.language = 'en';
    p.nThreads = threads;
    // without timestamp tokens: better word accuracy on bench/local-stt-accuracy's set; on an audio context trimmed
    // to the utterance the decoder then sometimes starts the sentence over ("... at 3? can we move my ..."), which
    // maxTokens bounds and whisper.ts collapses
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
