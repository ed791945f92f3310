// `local` STT, model `whisper-tiny.en` (the default): Whisper tiny.en through whisper.cpp (@napi-rs/whisper), the
// model file verified by media/services/model-files.ts before it is loaded. A process-wide pool of decoder helper
// processes (thread-pool.ts; LOCAL_STT_WORKERS, default one per core, each holding the model) serves every call. A
// call's stream keeps the current utterance: it opens at the first frame above SPEECH_RMS (with up to PREROLL_MS
// before it) and is decoded in one piece at finalize() (the end of the caller's turn: pauses the turn model keeps
// open stay inside it), or after AUTO_END_MS of quiet / MAX_UTTERANCE_MS: one final per turn, one decode of the
// turn's whole audio. The encoder's audio context is trimmed to the utterance (whisper-thread.ts), which is what
// makes short utterances fast to decode; a final whose decode loops is decoded again over the whole context there.
// The initial prompt carries the agent's vocabulary (the greeting the caller just heard and the key terms; never
// earlier transcripts: no context is carried from one decode to the next). Interims: one decode of the utterance so
// far every INTERIM_MS, only when a decoder is idle (on a loaded node interims stop first); each replaces the last. Finals are never dropped; past decoders × MAX_QUEUE_PER_THREAD waiting the utterance is refused
// with a non-fatal error (the call hears nothing rather than a reply seconds late).
import { rms } from '../../audio/pcm.ts';
import type { SttEvent, SttOptions, SttStream } from '../types.ts';
import { MODELS, verifiedModelFile } from '../model-files.ts';
import { poolSize, SharedPool, ThreadPool } from '../thread-pool.ts';
import type { WhisperRequest } from './whisper-thread.ts';
import { dropRepeatedRuns } from './repeats.ts';

const PREROLL_MS = 300;
/** Quiet that ends the utterance without a finalize(): past the turn model's longest pause inside a turn (3 s). */
const AUTO_END_MS = 4000;
const MAX_UTTERANCE_MS = 30_000;
const SPEECH_RMS = 0.001;
/** whisper.cpp refuses input under 1 s: shorter utterances are padded with silence. */
const MIN_SAMPLES = 16000 * 1.1;
/** Utterances with less sound than this (ms above SPEECH_RMS) are noise, not decoded (Whisper hallucinates on them). */
const MIN_LOUD_MS = 120;
const INTERIM_MS = 1000;
/**
 * Quiet inside a turn longer than this is not decoded (ms): a pause of 2 s in the middle of a sentence makes tiny.en
 * drop or invent words around it (bench/local-stt-accuracy's paused set), so a pause is kept at this length.
 */
const MAX_GAP_MS = 400;
const MAX_QUEUE_PER_THREAD = 6;

const pool = new SharedPool<WhisperRequest, string>();

/**
 * The shared decoder pool, its model verified (SHA-256) and loaded in every helper. Rejects (a ModelFileError or
 * the load error) when Whisper cannot run here; the caller falls back to PocketSphinx.
 */
export async function whisperPool(opts: { workers?: number; modelsDir?: string } = {}): Promise<ThreadPool<WhisperRequest, string>> {
  const modelPath = await verifiedModelFile(MODELS['whisper-tiny.en'].files[0]!, opts.modelsDir);
  return pool.get(modelPath, () =>
    new ThreadPool<WhisperRequest, string>(new URL('./whisper-thread.ts', import.meta.url), { modelPath, threads: 1 }, poolSize('LOCAL_STT_WORKERS', opts.workers), 'Whisper decoder'));
}

export async function closeWhisper(): Promise<void> {
  await pool.close();
}

/** Whisper's initial prompt from the agent's words: what the caller just heard and the key terms (≤ ~150 tokens). */
export function whisperPrompt(greeting: string | undefined, keyterms: string[]): string {
  const parts: string[] = [];
  if (keyterms.length) parts.push(`${keyterms.join(', ')}.`);
  if (greeting) parts.push(greeting.replace(/\{\{[^}]*\}\}/g, ' ').replace(/\s+/g, ' ').trim());
  return parts.join(' ').slice(0, 600);
}

/** The same words said over and over (a decoder loop) once: "a b c a b c a" → "a b c". */
export function collapseRepeats(text: string): string {
  const words = text.split(' ');
  const norm = (w: string) => w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');
  for (let p = 2; p * 2 <= words.length; p++) {
    let loop = true;
    for (let i = p; i < words.length && loop; i++) {
      const [a, b] = [norm(words[i]!), norm(words[i - p]!)];
      // the last word may be cut off where the decoder was stopped
      loop = a === b || (i === words.length - 1 && b.startsWith(a));
    }
    if (loop) return words.slice(0, p).join(' ');
  }
  return text;
}

/** The caller's words only: no non-speech annotations ([BLANK_AUDIO], (music), *laughs*), no decoder loop. */
function clean(text: string): string {
  return dropRepeatedRuns(collapseRepeats(
    text
      .replace(/\[[^\]]*\]|\([^)]*\)|\*[^*]*\*/g, ' ')
      .replace(/\s+/g, ' ')
      .replace(/^[\s,.;:!?-]+/, '')
      .trim(),
  ));
}

export class WhisperStream implements SttStream {
  private closed = false;
  private open = false;
  private chunks: Int16Array[] = [];
  private samples = 0;
  private preroll: Int16Array[] = [];
  private prerollSamples = 0;
  private quietMs = 0;
  private loudMs = 0;
  private sinceInterim = 0;
  private interimBusy = false;
  /** finals in order: a later utterance's text never overtakes an earlier one */
  private order: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: ThreadPool<WhisperRequest, string>,
    private readonly prompt: string,
    private readonly onEvent: (e: SttEvent) => void,
  ) {}

  write(pcm: Int16Array): void {
    if (this.closed || pcm.length === 0) return;
    const ms = (pcm.length / 16000) * 1000;
    const loud = rms(pcm) / 32768 >= SPEECH_RMS;
    if (!this.open) {
      this.preroll.push(pcm);
      this.prerollSamples += pcm.length;
      while (this.prerollSamples - this.preroll[0]!.length >= (PREROLL_MS / 1000) * 16000) this.prerollSamples -= this.preroll.shift()!.length;
      if (!loud) return;
      this.open = true;
      this.chunks = this.preroll;
      this.samples = this.prerollSamples;
      this.preroll = [];
      this.prerollSamples = 0;
      this.quietMs = 0;
      this.loudMs = ms;
      this.sinceInterim = 0;
      return;
    }
    this.quietMs = loud ? 0 : this.quietMs + ms;
    if (this.quietMs <= MAX_GAP_MS) {
      this.chunks.push(pcm);
      this.samples += pcm.length;
    }
    if (loud) this.loudMs += ms;
    this.sinceInterim += ms;
    if (this.quietMs >= AUTO_END_MS || (this.samples / 16000) * 1000 >= MAX_UTTERANCE_MS) return this.finalize();
    if (this.sinceInterim >= INTERIM_MS && !this.interimBusy && this.pool.outstanding === 0 && this.loudMs >= MIN_LOUD_MS) this.interim();
  }

  private audio(): Float32Array<ArrayBuffer> {
    const out = new Float32Array(Math.max(this.samples, MIN_SAMPLES));
    let at = 0;
    for (const c of this.chunks) {
      for (let i = 0; i < c.length; i++) out[at + i] = c[i]! / 32768;
      at += c.length;
    }
    return out;
  }

  private interim(): void {
    this.sinceInterim = 0;
    this.interimBusy = true;
    const samples = this.audio();
    this.pool.run({ samples, prompt: this.prompt }, [samples.buffer]).then(
      (text) => {
        this.interimBusy = false;
        const t = clean(text);
        if (!this.closed && this.open && t) this.onEvent({ type: 'interim', text: t });
      },
      () => {
        this.interimBusy = false;
      },
    );
  }

  finalize(): void {
    if (this.closed || !this.open) return;
    this.open = false;
    const loudMs = this.loudMs;
    const samples = this.audio();
    this.chunks = [];
    this.samples = 0;
    if (loudMs < MIN_LOUD_MS) return;
    if (this.pool.outstanding >= this.pool.size * MAX_QUEUE_PER_THREAD) {
      this.onEvent({ type: 'error', error: { message: 'local STT cannot keep up (every Whisper decoder is busy): utterance dropped', retryable: true, fatal: false } });
      return;
    }
    const decoded = this.pool.run({ samples, prompt: this.prompt, final: true }, [samples.buffer]);
    this.order = this.order.then(() =>
      decoded.then(
        (text) => {
          const t = clean(text);
          if (!this.closed && t) this.onEvent({ type: 'final', text: t });
        },
        (err: Error) => {
          if (!this.closed) this.onEvent({ type: 'error', error: { message: `local STT: ${err.message}`, retryable: true, fatal: false } });
        },
      ),
    );
  }

  close(): Promise<void> {
    this.closed = true;
    this.open = false;
    this.chunks = [];
    return Promise.resolve();
  }
}

export async function openWhisperStream(o: SttOptions, prompt: string, opts: { workers?: number; modelsDir?: string } = {}): Promise<SttStream> {
  return new WhisperStream(await whisperPool(opts), prompt, o.onEvent);
}
