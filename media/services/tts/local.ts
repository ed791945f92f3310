// `local` TTS. Model `piper` (piper.ts: the neural Piper voice en_US-joe-medium) is the default for English
// agents whose voice is unset, `default` or `en_US-joe-medium`; where its model files are missing or fail their
// hash check, or it cannot load, eSpeak NG speaks instead (reported once per process; the service's `model` and
// `voice` then say eSpeak). Model `espeak-ng`, or any eSpeak voice id, or a non-English agent: eSpeak NG.
//
// eSpeak NG (system package). The media process's shared synthesizers (espeak-pool.ts: long-lived
// libespeak-ng workers) speak every call's text; where they cannot run (no python3 or no libespeak-ng), or when
// a `binary` is named, one `espeak-ng --stdout` process per text chunk instead. Either way the 22 050 Hz audio is
// streamed as produced, resampled to 24 kHz (polyphase FIR, media/audio) and yielded in chunks; an abort stops
// the synthesis at once. Voice: `tts.voice` when it names an eSpeak voice (e.g. `en-us+f3`, `en-gb`, `hi`),
// else the agent's first language mapped to its eSpeak voice (en → en-us, zh → cmn, others by their code).
import { spawn } from 'node:child_process';
import { placeChildProcess } from '../../../core/affinity.ts';
import { Resampler } from '../../../core/audio/resample.ts';
import type { TtsService, TtsSynthesizeOptions } from '../types.ts';
import { engineError } from '../llm/openai.ts';
import { sharedEspeakPool } from './espeak-pool.ts';
import { createPiperTts, piperPool, PIPER_MODEL, PIPER_VOICE } from './piper.ts';

export const ESPEAK_RATE = 22050;

const LANGUAGE_VOICES: Record<string, string> = { en: 'en-us', zh: 'cmn' };

export function espeakVoice(voice: string | null | undefined, languages: string[]): string {
  if (voice && voice !== 'default') return voice;
  const lang = languages[0] ?? 'en';
  return LANGUAGE_VOICES[lang] ?? lang;
}

/** The model a `local` TTS with no model set uses: Piper for English with the default voice, else eSpeak NG. */
export function defaultLocalTtsModel(voice: string | null | undefined, languages: string[]): string {
  const english = (languages[0] ?? 'en') === 'en';
  return english && (!voice || voice === 'default' || voice === PIPER_VOICE) ? PIPER_MODEL : 'espeak-ng';
}

let fallbackReported = '';

export interface LocalTtsOptions {
  model?: string | null;
  voice?: string | null;
  languages?: string[];
  /** words per minute (eSpeak default 175) */
  wordsPerMinute?: number;
  binary?: string;
  /** Piper: where the model files are (default media/services/model-files.ts modelsDir()) */
  modelsDir?: string;
  /** Told once per process why Piper cannot run and eSpeak NG speaks instead (default: a process warning). */
  onFallback?: (message: string) => void;
}

export function createLocalTts(opts: LocalTtsOptions = {}): TtsService {
  const model = opts.model ?? defaultLocalTtsModel(opts.voice, opts.languages ?? ['en']);
  // Piper has an English voice only; an eSpeak voice id, or an eSpeak binary, names eSpeak
  if (model !== PIPER_MODEL || opts.binary || defaultLocalTtsModel(opts.voice, opts.languages ?? ['en']) !== PIPER_MODEL) return createEspeakTts({ ...opts, model: 'espeak-ng' });
  const piper = createPiperTts({ ...(opts.modelsDir ? { modelsDir: opts.modelsDir } : {}), ...(opts.wordsPerMinute ? { wordsPerMinute: opts.wordsPerMinute } : {}) });
  const espeak = createEspeakTts({ ...opts, voice: opts.voice === PIPER_VOICE ? null : opts.voice, model: 'espeak-ng' });
  let use: TtsService | null = null;
  const service = {
    provider: 'local',
    model: PIPER_MODEL,
    voice: PIPER_VOICE,
    lookahead: 1,
    async *synthesize(text: string, signal: AbortSignal, o?: TtsSynthesizeOptions): AsyncIterable<Int16Array> {
      if (!use) {
        try {
          await piperPool(opts.modelsDir ? { modelsDir: opts.modelsDir } : {});
          use = piper;
        } catch (err) {
          const why = (err as Error).message;
          if (fallbackReported !== why) {
            fallbackReported = why;
            (opts.onFallback ?? ((m: string) => process.emitWarning(m, 'LocalTtsFallback')))(`local TTS: the Piper voice cannot run (${why}); using eSpeak NG`);
          }
          use = espeak;
          service.model = espeak.model;
          service.voice = espeak.voice;
        }
      }
      yield* use.synthesize(text, signal, o);
    },
  };
  return service;
}

function createEspeakTts(opts: LocalTtsOptions): TtsService {
  const voice = espeakVoice(opts.voice, opts.languages ?? ['en']);
  if (!/^[A-Za-z0-9][A-Za-z0-9_+\-/]*$/.test(voice)) throw new Error(`invalid eSpeak voice '${voice}'`);
  const binary = opts.binary ?? 'espeak-ng';
  const wordsPerMinute = Math.round(opts.wordsPerMinute ?? 175);
  const wpm = String(wordsPerMinute);
  return {
    provider: 'local',
    model: opts.model ?? 'espeak-ng',
    voice,
    async *synthesize(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
      if (signal.aborted || !text.trim()) return;
      const pool = opts.binary ? null : await sharedEspeakPool();
      if (pool) {
        const resampler = new Resampler(pool.rate, 24000);
        try {
          for await (const pcm of pool.synthesize(text.replace(/\s+/g, ' '), voice, wordsPerMinute, signal)) {
            const out = resampler.process(pcm);
            if (out.length) yield out;
          }
        } catch (err) {
          if (signal.aborted) return;
          const message = (err as Error).message;
          throw engineError(`eSpeak NG failed: ${message}`, /exited|running/.test(message), false);
        }
        if (signal.aborted) return;
        const tail = resampler.flush();
        if (tail.length) yield tail;
        return;
      }
      const child = spawn(binary, ['--stdout', '-v', voice, '-s', wpm, '--stdin'], { stdio: ['pipe', 'pipe', 'pipe'] });
      placeChildProcess(child.pid); // off the pacing core (core/affinity.ts, MEDIA_PACING_CPU)
      const kill = () => child.kill('SIGKILL');
      signal.addEventListener('abort', kill, { once: true });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        if (stderr.length < 2000) stderr += d.toString();
      });
      const exited = new Promise<number | null>((ok) => child.once('close', (code) => ok(code)));
      const spawnError = new Promise<Error>((ok) => child.once('error', ok));
      child.stdin.on('error', () => {});
      child.stdin.end(text.replace(/\s+/g, ' ') + '\n');
      const resampler = new Resampler(ESPEAK_RATE, 24000);
      let header = Buffer.alloc(0);
      let headerDone = false;
      let odd: Buffer | null = null;
      try {
        const it = child.stdout[Symbol.asyncIterator]();
        for (;;) {
          const next = await Promise.race([it.next(), spawnError.then((e) => Promise.reject(e))]);
          if (next.done) break;
          if (signal.aborted) return;
          let chunk = next.value as Buffer;
          if (!headerDone) {
            header = Buffer.concat([header, chunk]);
            const dataAt = header.indexOf('data');
            if (dataAt < 0 || header.length < dataAt + 8) continue;
            const rate = header.readUInt32LE(24);
            if (rate !== ESPEAK_RATE) throw engineError(`eSpeak produced ${rate} Hz, expected ${ESPEAK_RATE}`, false, true);
            chunk = header.subarray(dataAt + 8);
            headerDone = true;
          }
          if (odd) {
            chunk = Buffer.concat([odd, chunk]);
            odd = null;
          }
          if (chunk.length & 1) {
            odd = chunk.subarray(chunk.length - 1);
            chunk = chunk.subarray(0, chunk.length - 1);
          }
          if (!chunk.length) continue;
          const pcm = new Int16Array(chunk.length / 2);
          new Uint8Array(pcm.buffer).set(chunk);
          const out = resampler.process(pcm);
          if (out.length) yield out;
        }
        if (signal.aborted) return;
        const code = await exited;
        if (code !== 0) throw engineError(`eSpeak NG failed (exit ${code}): ${stderr.trim().slice(0, 300)}`, false, false);
        const tail = resampler.flush();
        if (tail.length) yield tail;
      } catch (err) {
        if (signal.aborted) return;
        if ((err as { engineError?: unknown }).engineError) throw err;
        throw engineError(`eSpeak NG is not available: ${(err as Error).message}`, false, true);
      } finally {
        signal.removeEventListener('abort', kill);
        if (child.exitCode === null && child.signalCode === null) kill();
      }
    },
  };
}
