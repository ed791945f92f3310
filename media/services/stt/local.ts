// `local` STT: PocketSphinx 5 (the PyPI wheel, which ships its US-English acoustic model and dictionary; no
// download at run time), one recogniser process per call fed over a pipe, with a small per-agent language model.
//
// Why this shape: PocketSphinx's general 130k-word model gets well under half of the words right on synthesized
// or phone speech. A trigram model over a base vocabulary of phone-call English plus the agent's own words
// (system prompt, greetings, key terms; key terms weighted up) roughly doubles the word accuracy (figures in
// test/media/services/local-stt.test.ts and the report). The PyPI build (5.x) is used rather than Debian's
// 0.8 `pocketsphinx_continuous` because it recognises markedly better with the same model, gives partial
// hypotheses (interim transcripts) and lets us end an utterance on demand (finalize at VAD end of speech).
//
// The Python runtime is the virtualenv that scripts/setup.sh creates at .data/stt-venv (LOCAL_STT_PYTHON
// overrides). Where it is missing (e.g. an image with only the apt packages), Debian's `pocketsphinx_continuous`
// is used instead with the same language model: finals only (no interims), lower accuracy. Words without a CMU
// pronunciation get one guessed through eSpeak NG (pronounce.ts).
import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, writeFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { BASE_SENTENCES } from './base-corpus.ts';
import { buildLanguageModel, tokenize } from './lm.ts';
import { buildDictionary } from './pronounce.ts';

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

const MAX_BACKLOG = 16000 * 2 * 20; // bytes: 20 s of audio waiting for the recogniser

class PocketsphinxStream implements SttStream {
  private closed = false;
  private exited: Promise<void>;

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly onEvent: (e: SttEvent) => void,
  ) {
    this.exited = new Promise((res) => child.once('exit', () => res()));
    child.stdin.on('error', () => {}); // EPIPE after a crash is reported through 'exit'
    child.once('exit', (code, signal) => {
      if (!this.closed)
        this.onEvent({ type: 'error', error: { message: `local STT process exited (${signal ?? code})`, retryable: false, fatal: true } });
    });
  }

  private send(kind: 'A' | 'F' | 'Q', payload?: Buffer): void {
    if (this.closed && kind !== 'Q') return;
    if (this.child.exitCode !== null || this.child.stdin.destroyed) return;
    const header = Buffer.alloc(5);
    header.write(kind, 0, 'latin1');
    header.writeUInt32LE(payload?.length ?? 0, 1);
    this.child.stdin.write(payload ? Buffer.concat([header, payload]) : header);
  }

  private behind = false;

  write(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    // never block and never queue without bound: past MAX_BACKLOG of undecoded audio, drop (once reported)
    if (this.child.stdin.writableLength > MAX_BACKLOG) {
      if (!this.behind) {
        this.behind = true;
        this.onEvent({ type: 'error', error: { message: 'local STT cannot keep up (CPU overloaded): dropping audio', retryable: true, fatal: false } });
      }
      return;
    }
    this.behind = false;
    this.send('A', Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  }

  finalize(): void {
    this.send('F');
  }

  async close(): Promise<void> {
    if (this.closed) return this.exited;
    this.closed = true;
    this.send('Q');
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 2000);
    await this.exited;
    clearTimeout(timer);
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

export function createLocalStt(model: string, opts: LocalSttOptions = {}): SttService {
  const python = opts.python ?? defaultSttPython();
  const cacheDir = opts.cacheDir ?? join(tmpdir(), 'voice-agent-local-stt');
  const corpus = opts.corpus ?? [];
  return {
    provider: 'local',
    model,
    hasTurnDetection: false,
    async open(o: SttOptions): Promise<SttStream> {
      const mode = opts.backend ?? 'auto';
      const backend = mode === 'cli' ? await resolveBackend('/nonexistent/python', true) : await resolveBackend(python, mode === 'auto');
      const files = await prepareModel(corpus, o.keyterms, backend.cmudict, cacheDir);
      if (backend.kind === 'cli') return openCli(files, o.onEvent);
      const child = spawn(python, [WORKER, JSON.stringify(files)], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        if (stderr.length < 4000) stderr += d.toString();
      });
      const stream = await new Promise<PocketsphinxStream>((ok, fail) => {
        let buf = '';
        let ready: PocketsphinxStream | null = null;
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          fail(new Error('local STT did not start within 20 s'));
        }, 20_000);
        child.once('error', (err) => {
          clearTimeout(timer);
          fail(err);
        });
        child.once('exit', (code) => {
          clearTimeout(timer);
          if (!ready) fail(new Error(`local STT failed to start (exit ${code}): ${stderr.trim().slice(-500)}`));
        });
        child.stdout.on('data', (d: Buffer) => {
          buf += d.toString();
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            let msg: { type?: string; text?: string; message?: string };
            try {
              msg = JSON.parse(line) as typeof msg;
            } catch {
              continue;
            }
            if (msg.type === 'ready' && !ready) {
              clearTimeout(timer);
              ready = new PocketsphinxStream(child, o.onEvent);
              ok(ready);
            } else if (msg.type === 'interim' || msg.type === 'final') {
              if (msg.text) o.onEvent({ type: msg.type, text: msg.text });
            } else if (msg.type === 'error') {
              o.onEvent({ type: 'error', error: { message: `local STT: ${msg.message ?? 'error'}`, retryable: false, fatal: true } });
            }
          }
        });
      });
      return stream;
    },
  };
}
