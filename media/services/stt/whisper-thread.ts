// One Whisper decoder (whisper.cpp through @napi-rs/whisper) in a helper process of the pool in whisper.ts: its
// full() call is synchronous and long, so it must never run on the media process's event loop.
// Request: 16 kHz mono float samples of one utterance, the initial prompt. Reply: the text.
// A final whose text repeats a run of words (the decoder's loop on a tightly trimmed audio context: repeats.ts) is
// decoded again with RETRY_CTX_MARGIN frames of margin, which did not loop on the audio that looped (docs/benchmarks.md);
// interims are not (the next one replaces them anyway, and whisper.ts drops their repeated runs).
import { Whisper, WhisperFullParams, WhisperSamplingStrategy } from '@napi-rs/whisper';
import { poolData, poolPort, serveThread } from '../thread-pool.ts';
import { repeatedRun } from './repeats.ts';

export interface WhisperRequest {
  samples: Float32Array;
  prompt: string;
  /** a final: decoded again with the whole audio context when the first decode loops */
  final?: boolean;
}

// Encoder frames (20 ms each) of padding after the utterance: the margin with the best word accuracy on
// bench/local-stt-accuracy.ts, above all on the 8 kHz phone line (docs/benchmarks.md).
const AUDIO_CTX_MARGIN = 128;
/** The margin of the second decode of a final that looped (10 s: about half the cost of the whole 30 s context). */
const RETRY_CTX_MARGIN = 512;

const { modelPath, threads } = poolData<{ modelPath: string; threads: number }>();

void serveThread<WhisperRequest, string>(poolPort, async () => {
  const whisper = new Whisper(modelPath, { useGpu: false });
  const once = (samples: Float32Array, prompt: string, margin: number): string => {
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
    p.audioCtx = Math.min(1500, Math.ceil((samples.length / 16000) * 50) + margin);
    // at most ~5 tokens per second of audio (fast speech is ~3.5): a decoder stuck repeating itself stops early
    p.maxTokens = Math.ceil((samples.length / 16000) * 5) + 8;
    if (prompt) p.initialPrompt = prompt;
    return whisper.full(p, samples);
  };
  const decode = async ({ samples, prompt, final }: WhisperRequest): Promise<{ result: string }> => {
    const text = once(samples, prompt, AUDIO_CTX_MARGIN);
    return { result: final && repeatedRun(text) ? once(samples, prompt, RETRY_CTX_MARGIN) : text };
  };
  // warm: the first decode (buffers allocated, weights paged in) happens here, before the helper says it is loaded
  await decode({ samples: new Float32Array(16000 * 1.1), prompt: '' });
  return decode;
});
