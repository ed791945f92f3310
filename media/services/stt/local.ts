// `local` STT. Model `whisper-tiny.en` (the default; whisper.ts) runs when its model file is installed and verified;
// otherwise, and for model `pocketsphinx`, this file's recogniser runs (the fallback is reported once per process,
// and the service's `model` says which one runs): PocketSphinx 5 (the PyPI wheel, with its US-English acoustic model
// and dictionary; no download at run time) in a shared pool of recogniser processes, with a small per-agent trigram
// language model over a base vocabulary of phone-call English plus the agent's own words (system prompt, greetings,
// key terms weighted up), because the general 130k-word model recognises synthesized or phone speech poorly
// (docs/benchmarks.md). PocketSphinx 5 rather than Debian's 0.8 `pocketsphinx_continuous`: better recognition with
// the same model, interim transcripts, and an utterance can be ended on demand (finalize at the VAD's end of speech).
// The Python runtime is the virtualenv scripts/setup.sh creates at .data/stt-venv (LOCAL_STT_PYTHON overrides);
// without it Debian's binary runs with the same language model (finals only, lower accuracy). Words without a CMU
// pronunciation get one guessed through eSpeak NG (pronounce.ts).
import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { HelperPool, HelperProcess } from '../helper-process.ts';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, writeFile, rename } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rms } from '../../audio/pcm.ts';
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { BASE_SENTENCES } from './base-corpus.ts';
import { buildLanguageModel, tokenize } from './lm.ts';
import { buildDictionary } from './pronounce.ts';
import { openWhisperStream, whisperPrompt } from './whisper.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../../..');
const WORKER = join(HERE, 'pocketsphinx_worker.py');

/** The virtualenv scripts/setup.sh creates (config LOCAL_STT_PYTHON overrides, passed in by the registry). */
export function defaultSttPython(): string {
  return join(REPO, '.data/stt-venv/bin/python');
}

const probes = new Map<string, Promise<string>>();

/** Resolves to the wheel's model directory; rejects with a readable reason when the engine is not installed. */
export function probePocketsphinx(python = defaultSttPython()): Promise<string> {
  let p = probes.get(python);
  if (!p) {
    p = new Promise<string>((ok, fail) => {
      if (!existsSync(python)) return fail(new Error(`local STT needs PocketSphinx 5 in ${python} (run scripts/setup.sh)`));
      execFile(python, ['-c', 'import pocketsphinx; print(pocketsphinx.get_model_path())'], { timeout: 15_000 }, (err, out) => {
        if (err) return fail(new Error(`local STT: pocketsphinx is not importable by ${python}: ${err.message}`));
        ok(out.trim());
      });
    });
    p.catch(() => probes.delete(python));
    probes.set(python, p);
  }
  return p;
}

/** Debian's PocketSphinx 0.8 (apt packages pocketsphinx + pocketsphinx-en-us): the fallback backend. */
export const APT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
const APT_BINARY = 'pocketsphinx_continuous';

function onPath(bin: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, bin)));
}

export type SttBackend = { kind: 'python'; python: string; cmudict: string } | { kind: 'cli'; cmudict: string };

/**
 * PocketSphinx 5 through Python when installed (better accuracy, interim transcripts); else Debian's
 * `pocketsphinx_continuous` reading raw audio from a pipe (finals only, at its own end-of-utterance detection or
 * on finalize); else a readable error.
 */
export async function resolveBackend(python = defaultSttPython(), allowCli = true): Promise<SttBackend> {
  try {
    const modelDir = await probePocketsphinx(python);
    return { kind: 'python', python, cmudict: join(modelDir, 'en-us', 'cmudict-en-us.dict') };
  } catch (err) {
    if (allowCli && onPath(APT_BINARY) && existsSync(join(APT_MODEL_DIR, 'cmudict-en-us.dict')))
      return { kind: 'cli', cmudict: join(APT_MODEL_DIR, 'cmudict-en-us.dict') };
    throw new Error(`${(err as Error).message}; Debian's ${APT_BINARY} (apt install pocketsphinx pocketsphinx-en-us) is not installed either`);
  }
}

export interface LocalSttOptions {
  /** 'python' (PocketSphinx 5 only), 'cli' (Debian's binary only) or 'auto' (default: python, else cli). */
  backend?: 'auto' | 'python' | 'cli';
  /** Text the agent is about (system prompt, greetings, tool descriptions): its words join the vocabulary. */
  corpus?: string[];
  python?: string;
  /** Directory for the generated language models (content-addressed, reused across calls). */
  cacheDir?: string;
  /** Whisper: the agent's greeting (the initial prompt carries it with the key terms). */
  greeting?: string;
  /** Whisper: where the model files are (default media/services/model-files.ts modelsDir()). */
  modelsDir?: string;
  /** Told once per process why Whisper cannot run and PocketSphinx is used instead (default: a process warning). */
  onFallback?: (message: string) => void;
}

const built = new Map<string, Promise<{ lm: string; dict: string }>>();

/** Writes (once per distinct vocabulary) the ARPA model and dictionary files and returns their paths. */
export function prepareModel(corpus: string[], keyterms: string[], cmudictPath: string, cacheDir: string): Promise<{ lm: string; dict: string }> {
  const key = createHash('sha256').update(JSON.stringify([corpus, keyterms, cmudictPath])).digest('hex').slice(0, 24);
  let p = built.get(key);
  if (!p) {
    p = (async () => {
      const lm = join(cacheDir, `${key}.arpa`);
      const dict = join(cacheDir, `${key}.dict`);
      if (existsSync(lm) && existsSync(dict)) return { lm, dict };
      await mkdir(cacheDir, { recursive: true });
      const sentences = [...BASE_SENTENCES, ...corpus];
      const words = new Set([...sentences, ...keyterms].flatMap(tokenize));
      const { text, known } = await buildDictionary(words, cmudictPath);
      const model = buildLanguageModel({ sentences, keyterms }, (w) => known.has(w));
      // write-then-rename so a concurrent process never reads a half-written file
      const tmp = `.${process.pid}.${Date.now()}.tmp`;
      await writeFile(lm + tmp, model.arpa);
      await writeFile(dict + tmp, text);
      await rename(lm + tmp, lm);
      await rename(dict + tmp, dict);
      return { lm, dict };
    })();
    p.catch(() => built.delete(key));
    built.set(key, p);
  }
  return p;
}

// ── the shared recogniser pool ───────────────────────────────────────────────────────────────────────────
// A few PocketSphinx processes per media process (LOCAL_STT_WORKERS, default one per core) serve the utterances
// of every call; each process multiplexes many utterances (pocketsphinx_worker.py). A call's stream only sends
// audio while the caller makes sound: an utterance opens at the first frame above SPEECH_RMS (with up to
// PREROLL_MS of the audio before it), ends at finalize() (the VAD's end of speech), after AUTO_END_MS of quiet or
// after MAX_UTTERANCE_MS. Each utterance goes to the worker with the fewest open utterances. Bounded: at most
// MAX_UTTERANCES_PER_WORKER open utterances and MAX_BACKLOG bytes of undecoded audio per worker; past either the
// audio is dropped and the call gets a non-fatal error (the recognisers are overloaded) instead of a growing delay.
// A worker that dies is restarted; its open utterances end with a non-fatal error.

const MAX_BACKLOG = 16000 * 2 * 60; // bytes per worker: 60 s of audio (a few seconds of decoding) waiting
const MAX_UTTERANCES_PER_WORKER = 96;
/** Decoders built ahead per worker for each agent vocabulary (first call of the agent on this process). */
const PREPARED_DECODERS = 16;
const PREROLL_MS = 300;
/**
 * Within an utterance, quiet past this long is not sent on (the recogniser has all it needs to end the last word;
 * the VAD's end of speech comes only after ≈ 600 ms of it): it is kept as preroll instead and sent only if sound
 * resumes. Decoding silence costs as much as decoding speech, and it is much of a short utterance.
 */
const TRAIL_MS = 250;
const AUTO_END_MS = 2000;
const MAX_UTTERANCE_MS = 30_000;
/** Frames quieter than this (RMS, full scale 1; ≈ −60 dBFS) do not open an utterance. */
const SPEECH_RMS = 0.001;

type Kind = 'O' | 'A' | 'F' | 'X' | 'P' | 'Q';
type WorkerMsg = { type: string; text?: string; message?: string; cmn?: string };
type UttHandler = (msg: WorkerMsg) => void;

class PoolWorker extends HelperProcess {
  readonly open = new Map<number, UttHandler>();
  /** Audio the recogniser has received but not decoded yet (ms, all its utterances; it reports changes). */
  queuedMs = 0;
  private buf = '';

  constructor(python: string) {
    super(python, [WORKER], 'local STT', 20_000);
  }

  protected onOutput(d: Buffer): void {
    this.buf += d.toString();
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      let msg: Partial<WorkerMsg> & { id?: number; backlog_ms?: number };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        continue;
      }
      if (msg.type === 'ready') this.started();
      else if (msg.type === 'load') this.queuedMs = Number(msg.backlog_ms) || 0;
      else if (msg.id !== undefined) {
        const h = this.open.get(msg.id);
        if (!h) continue;
        if (msg.type === 'final' || msg.type === 'error') this.open.delete(msg.id);
        h(msg as WorkerMsg);
      }
    }
  }

  protected busy(): boolean {
    return false; // utterances never keep the process alive: the call's transport does
  }

  protected onDeath(): void {
    for (const h of this.open.values()) h({ type: 'error', message: 'local STT recogniser restarted: the last words were lost' });
    this.open.clear();
  }

  override send(kind: Kind, id: number, payload?: Buffer): boolean {
    return super.send(kind, id, payload);
  }

  /** Undecoded audio in bytes: still in the pipe plus queued in the recogniser. */
  get backlog(): number {
    return this.child.stdin.writableLength + this.queuedMs * 32;
  }
}

export class PocketsphinxPool extends HelperPool<PoolWorker> {
  private nextId = 1;
  private readonly prepared = new Set<string>();

  constructor(
    readonly python: string,
    readonly size: number,
  ) {
    super(size, () => new PoolWorker(python));
  }

  /** Build a decoder for this model in every worker now (the first utterances of a new agent skip it). */
  prepare(files: { lm: string; dict: string }): void {
    if (this.prepared.has(files.lm)) return;
    this.prepared.add(files.lm);
    const payload = Buffer.from(JSON.stringify({ ...files, count: PREPARED_DECODERS }));
    for (const w of this.workers) w.send('P', 0, payload);
  }

  /**
   * Open an utterance on the least loaded live worker; null when every worker is full or down. cmn: the cepstral
   * mean the call's previous utterance ended with (the recogniser adapts to the caller's line).
   */
  openUtterance(files: { lm: string; dict: string }, handler: UttHandler, cmn?: string): { id: number; worker: PoolWorker } | null {
    let best: PoolWorker | null = null;
    for (const w of this.workers) {
      if (w.dead || w.open.size >= MAX_UTTERANCES_PER_WORKER || w.backlog > MAX_BACKLOG) continue;
      if (!best || w.open.size + w.backlog / 32000 < best.open.size + best.backlog / 32000) best = w;
    }
    if (!best) return null;
    const id = this.nextId++;
    if (this.nextId > 0xfffffff0) this.nextId = 1;
    best.open.set(id, handler);
    best.send('O', id, Buffer.from(JSON.stringify({ ...files, cmn })));
    return { id, worker: best };
  }

  /** Open utterances per worker (tests, metrics). */
  get load(): number[] {
    return this.workers.map((w) => w.open.size);
  }
}

const pools = new Map<string, PocketsphinxPool>();

/** The process-wide pool for this Python (created on first use, or at process start by warmLocalStt). */
export function sharedPool(python = defaultSttPython(), size = defaultPoolSize()): PocketsphinxPool {
  let p = pools.get(python);
  if (!p) {
    p = new PocketsphinxPool(python, size);
    pools.set(python, p);
  }
  return p;
}

export function defaultPoolSize(): number {
  const n = Number(process.env.LOCAL_STT_WORKERS);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : Math.max(1, os.availableParallelism());
}

/**
 * At process start: when PocketSphinx 5 is installed, start the recogniser pool and build the base vocabulary's
 * model, so the first call does not pay for either. Resolves false (and does nothing) when it is not installed.
 */
export async function warmLocalStt(opts: { python?: string; workers?: number; cacheDir?: string } = {}): Promise<boolean> {
  const python = opts.python ?? defaultSttPython();
  try {
    const backend = await resolveBackend(python, false);
    const pool = sharedPool(python, opts.workers);
    await pool.ready();
    if (backend.kind === 'python') pool.prepare(await prepareModel([], [], backend.cmudict, opts.cacheDir ?? defaultCacheDir()));
    return true;
  } catch {
    return false;
  }
}

export async function closeLocalStt(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}

const defaultCacheDir = () => join(tmpdir(), 'voice-agent-local-stt');

/** One call's recognition on the shared pool: utterances open on sound, end at finalize / quiet / 30 s. */
class PooledStream implements SttStream {
  private closed = false;
  private utt: { id: number; worker: PoolWorker } | null = null;
  private readonly preroll: Int16Array[] = [];
  private prerollSamples = 0;
  private quietMs = 0;
  private uttMs = 0;
  private behind = false;
  /** This caller's cepstral mean after its last utterance (the line's average spectrum), for the next one. */
  private cmn: string | undefined;

  constructor(
    private readonly pool: PocketsphinxPool,
    private readonly files: { lm: string; dict: string },
    private readonly onEvent: (e: SttEvent) => void,
  ) {}

  private overloaded(what: string): void {
    if (this.behind) return;
    this.behind = true;
    this.onEvent({ type: 'error', error: { message: `local STT cannot keep up (${what}): dropping audio`, retryable: true, fatal: false } });
  }

  /** Keep the latest PREROLL_MS of audio not sent (yet). */
  private hold(pcm: Int16Array): void {
    this.preroll.push(pcm);
    this.prerollSamples += pcm.length;
    while (this.prerollSamples - this.preroll[0]!.length >= (PREROLL_MS / 1000) * 16000) this.prerollSamples -= this.preroll.shift()!.length;
  }

  /** Send what hold() kept, oldest first. */
  private flushHeld(): void {
    const held = this.preroll.splice(0);
    this.prerollSamples = 0;
    for (const a of held) this.sendAudio(a);
  }

  write(pcm: Int16Array): void {
    if (this.closed || pcm.length === 0) return;
    const ms = (pcm.length / 16000) * 1000;
    const loud = rms(pcm) / 32768 >= SPEECH_RMS;
    if (!this.utt) {
      this.hold(pcm);
      if (!loud) return;
      const utt = this.pool.openUtterance(this.files, (msg) => this.onWorker(msg), this.cmn);
      if (!utt) return this.overloaded('every recogniser is busy');
      this.utt = utt;
      this.quietMs = 0;
      this.uttMs = 0;
      this.flushHeld();
      return;
    }
    this.uttMs += ms;
    this.quietMs = loud ? 0 : this.quietMs + ms;
    if (this.quietMs > TRAIL_MS) {
      // quiet that may well be the end: held back (the latest PREROLL_MS of it) until sound resumes
      this.hold(pcm);
    } else {
      this.flushHeld();
      this.sendAudio(pcm);
    }
    if (this.quietMs >= AUTO_END_MS || this.uttMs >= MAX_UTTERANCE_MS) this.finalize();
  }

  private sendAudio(pcm: Int16Array): void {
    const utt = this.utt!;
    if (utt.worker.backlog > MAX_BACKLOG) return this.overloaded('CPU overloaded');
    this.behind = false;
    utt.worker.send('A', utt.id, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  }

  private onWorker(msg: WorkerMsg): void {
    if (this.closed) return;
    if (msg.type === 'final' && msg.cmn) this.cmn = msg.cmn;
    if (msg.type === 'interim' || msg.type === 'final') {
      if (msg.text) this.onEvent({ type: msg.type, text: msg.text });
    } else if (msg.type === 'error') {
      this.utt = null;
      this.onEvent({ type: 'error', error: { message: `local STT: ${msg.message ?? 'error'}`, retryable: true, fatal: false } });
    }
  }

  finalize(): void {
    const utt = this.utt;
    this.utt = null;
    if (utt) utt.worker.send('F', utt.id);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    const utt = this.utt;
    this.utt = null;
    if (utt) {
      utt.worker.open.delete(utt.id);
      utt.worker.send('X', utt.id);
    }
    return Promise.resolve();
  }
}

const CLI_FLUSH = Buffer.alloc(16000 * 2 * 0.8); // 0.8 s of silence: past its 0.5 s end-of-utterance window

/** Debian's pocketsphinx_continuous on a pipe: one line per utterance it detects (no partial results). */
class CliPocketsphinxStream implements SttStream {
  private closed = false;
  private exited: Promise<void>;

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    onEvent: (e: SttEvent) => void,
  ) {
    this.exited = new Promise((res) => child.once('close', () => res()));
    child.stdin.on('error', () => {});
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (text) onEvent({ type: 'final', text });
      }
    });
    child.once('exit', (code, signal) => {
      if (!this.closed) onEvent({ type: 'error', error: { message: `local STT process exited (${signal ?? code})`, retryable: false, fatal: true } });
    });
  }

  write(pcm: Int16Array): void {
    if (this.closed || pcm.length === 0 || this.child.stdin.destroyed) return;
    this.child.stdin.write(Buffer.from(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength)));
  }

  finalize(): void {
    if (!this.closed && !this.child.stdin.destroyed) this.child.stdin.write(CLI_FLUSH);
  }

  async close(): Promise<void> {
    if (this.closed) return this.exited;
    this.closed = true;
    this.child.stdin.end();
    const timer = setTimeout(() => {
      try {
        if (this.child.pid) process.kill(-this.child.pid, 'SIGKILL'); // the shell, cat and the recogniser
      } catch {
        /* already gone */
      }
    }, 2000);
    await this.exited;
    clearTimeout(timer);
  }
}

function openCli(files: { lm: string; dict: string }, onEvent: (e: SttEvent) => void): SttStream {
  // Node's child stdin is a socket, which the binary cannot fopen() as /dev/stdin: `cat` turns it into a pipe.
  // stdbuf: its stdout is a pipe too, so force line buffering to get each utterance as soon as it is decoded.
  const script = `cat | exec stdbuf -oL ${APT_BINARY} -infile /dev/stdin -lm "$1" -dict "$2" -remove_noise no -logfn /dev/null`;
  const child = spawn('sh', ['-c', script, 'sh', files.lm, files.dict], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  child.stderr.resume();
  return new CliPocketsphinxStream(child, onEvent);
}

/** The `local` STT's models: Whisper tiny.en (default) and PocketSphinx (selectable; the fallback). */
export const WHISPER_MODEL = 'whisper-tiny.en';
export const POCKETSPHINX_MODEL = 'pocketsphinx';

/** Why Whisper could not run, reported once per process (then every call falls back quietly). */
let fallbackReported = '';

export function createLocalStt(model: string, opts: LocalSttOptions = {}): SttService {
  const python = opts.python ?? defaultSttPython();
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const corpus = opts.corpus ?? [];
  const service = {
    provider: 'local',
    /** the model this service runs: after a fallback, `pocketsphinx` */
    model,
    hasTurnDetection: false,
    // the final is decoded here after finalize(): it always comes, seconds later on a loaded machine, and the
    // interim it would be replaced by is the turn cut short
    finalWaitMs: 8000,
    async open(o: SttOptions): Promise<SttStream> {
      if (model !== POCKETSPHINX_MODEL) {
        try {
          const stream = await openWhisperStream(o, whisperPrompt(opts.greeting, o.keyterms), opts.modelsDir ? { modelsDir: opts.modelsDir } : {});
          service.model = WHISPER_MODEL;
          return stream;
        } catch (err) {
          const why = (err as Error).message;
          if (fallbackReported !== why) {
            fallbackReported = why;
            (opts.onFallback ?? ((m: string) => process.emitWarning(m, 'LocalSttFallback')))(`local STT: Whisper cannot run (${why}); using PocketSphinx`);
          }
          service.model = POCKETSPHINX_MODEL;
        }
      }
      const mode = opts.backend ?? 'auto';
      const backend = mode === 'cli' ? await resolveBackend('/nonexistent/python', true) : await resolveBackend(python, mode === 'auto');
      const files = await prepareModel(corpus, o.keyterms, backend.cmudict, cacheDir);
      if (backend.kind === 'cli') return openCli(files, o.onEvent);
      const pool = sharedPool(python);
      await pool.ready();
      pool.prepare(files);
      return new PooledStream(pool, files, o.onEvent);
    },
  };
  return service;
}
