// `local` TTS, model `piper` (the default for English): the Piper voice en_US-joe-medium (VITS, ONNX, 22 050 Hz)
// run through onnxruntime-node on a shared pool of inference helper processes (piper-thread.ts; LOCAL_TTS_WORKERS,
// default one per core), the model files verified by media/services/model-files.ts before they are loaded.
//
// Each chunk the pipeline hands over (a sentence, or the first clause of a reply) is split further at clause
// boundaries when it is long, and the first chunk of an utterance starts with a lead piece of at most LEAD_MAX
// characters (so the first audio comes after one short piece, not a whole long sentence); the pieces are
// synthesized in order, the next one while the current one is yielded, and resampled to the pipeline's 24 kHz. An
// abort stops after the piece in flight (a clause) and yields nothing more.
import { Resampler } from '../../../core/audio/resample.ts';
import { engineError } from '../llm/openai.ts';
import { verifiedModel } from '../model-files.ts';
import { poolSize, SharedPool, ThreadPool } from '../thread-pool.ts';
import type { TtsService, TtsSynthesizeOptions } from '../types.ts';
import type { PiperRequest } from './piper-thread.ts';

export const PIPER_MODEL = 'piper';
export const PIPER_VOICE = 'en_US-joe-medium';
export const PIPER_RATE = 22050;
/** pieces longer than this (characters) are split at clause boundaries */
const LONG = 90;
/** ... into pieces of at least this many characters */
const MIN_PIECE = 24;
/**
 * The first chunk of an utterance longer than this (characters) starts with a shorter lead piece: its first audio
 * comes after that piece's synthesis, whose time grows with its length, so the lead piece is kept to a short clause
 * (docs/benchmarks.md).
 */
const LEAD_MAX = 26;
/** the lead piece is at least this long (a lone "Well," or "Yes," gains little; "You said:" is taken) */
const LEAD_MIN = 8;
/** a clause boundary up to here is taken rather than a cut inside the clause; a sentence this short is not cut */
const LEAD_CLAUSE_MAX = 30;
/** words a phrase starts with: where a lead piece is cut when the first clause has no punctuation early enough */
const PHRASE_START = new Set(['and', 'but', 'or', 'so', 'because', 'with', 'without', 'for', 'at', 'on', 'in', 'from', 'until', 'which', 'who', 'when', 'where', 'if', 'about', 'after', 'before', 'by', 'while']);
/** words that lean on the word after them: a lead piece never ends with one ("Let me check the," is not a clause) */
const LEANS_ON_NEXT = new Set([...PHRASE_START, 'the', 'a', 'an', 'my', 'your', 'our', 'their', 'his', 'her', 'its', 'this', 'that', 'these', 'those', 'to', 'of', 'into', 'than', 'some', 'any', 'no', 'every', 'each']);

const pool = new SharedPool<PiperRequest, Int16Array>();

/** The shared Piper pool, its files verified (SHA-256) and the voice loaded in every helper; rejects when it cannot run. */
export async function piperPool(opts: { workers?: number; modelsDir?: string; espeak?: string } = {}): Promise<ThreadPool<PiperRequest, Int16Array>> {
  const [modelPath, configPath] = await verifiedModel('piper-en_US-joe-medium', opts.modelsDir);
  const espeak = opts.espeak ?? 'espeak-ng';
  return pool.get(`${modelPath}|${espeak}`, () =>
    new ThreadPool<PiperRequest, Int16Array>(new URL('./piper-thread.ts', import.meta.url), { modelPath, configPath, espeak }, poolSize('LOCAL_TTS_WORKERS', opts.workers), 'Piper voice'));
}

export async function closePiper(): Promise<void> {
  await pool.close();
}

/** A chunk into pieces: short ones as they are, long ones at sentence and clause boundaries (. ! ? , ; : dashes). */
export function splitClauses(text: string): string[] {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t.length <= LONG) return t ? [t] : [];
  const parts = t.split(/(?<=[,;:.!?])\s+|\s+(?=—|–|-\s)/);
  const out: string[] = [];
  for (const p of parts) {
    const last = out.at(-1);
    if (last !== undefined && (last.length < MIN_PIECE || p.length < MIN_PIECE / 2) && last.length + p.length < LONG) out[out.length - 1] = `${last} ${p}`;
    else out.push(p);
  }
  return out;
}

/**
 * A lead piece of at most LEAD_MAX characters off the front of a text, and the rest; null when the text is short
 * enough already and does not start with a short sentence of its own (that one is always the lead). Cut at the last clause boundary (. ! ? , ; : dashes) between LEAD_MIN and LEAD_MAX (or the first
 * one up to LEAD_CLAUSE_MAX), else, in a text longer than LEAD_CLAUSE_MAX, before the last word that starts a phrase
 * (and, with, for, on, ...), else at the last space — never inside a name and never after a word that leans on the
 * next ("the", "to", "for"); a cut inside a clause gets a comma, so that the voice ends the piece as a clause (continuing), not as a
 * sentence.
 */
export function leadPiece(text: string): [string, string] | null {
  const t = text.replace(/\s+/g, ' ').trim();
  // a short whole sentence first ("Hello!", "Sure.", "Of course.") is its own lead piece, however short the text:
  // a sentence ends there anyway, so the voice loses nothing, and the rest is synthesized while it plays
  const sentence = /^[^.!?]{2,}?[.!?](?= \S)/u.exec(t);
  if (sentence && sentence[0].length <= LEAD_MAX && /\p{L}/u.test(sentence[0]) && !abbreviation(sentence[0])) return [sentence[0], t.slice(sentence[0].length).trim()];
  if (t.length <= LEAD_MAX) return null;
  let clause = -1;
  for (const m of t.matchAll(/[,;:.!?](?= )| (?=—|–|- )/g))
    if (m.index + 1 >= LEAD_MIN && m.index + 1 <= LEAD_CLAUSE_MAX && (clause < 0 || m.index + 1 <= LEAD_MAX)) clause = m.index + 1;
  if (clause > 0) return [t.slice(0, clause).trim(), t.slice(clause).trim()];
  // inside a clause only when the text is long (a short sentence keeps its words together)
  if (t.length <= LEAD_CLAUSE_MAX) return null;
  let space = -1;
  let phrase = -1;
  let prev = { word: t.slice(0, t.indexOf(' ')), first: true };
  for (const m of t.matchAll(/ (\S+)/g)) {
    const word = m[1]!;
    const before = prev;
    prev = { word, first: false };
    if (m.index > LEAD_MAX) break;
    if (m.index < LEAD_MIN) continue;
    // not inside a name ("Bright Smile Dental", "Doctor Patel"), not after a word that leans on this one ("the")
    if (!before.first && before.word !== 'I' && capitalized(before.word) && capitalized(word)) continue;
    if (LEANS_ON_NEXT.has(before.word.toLowerCase())) continue;
    space = m.index;
    if (PHRASE_START.has(word.toLowerCase())) phrase = m.index;
  }
  const cut = phrase > 0 ? phrase : space;
  if (cut <= 0) return null;
  return [`${t.slice(0, cut).replace(/[,;:]$/, '')},`, t.slice(cut + 1)];
}

const capitalized = (w: string) => /^\p{Lu}/u.test(w);

/** words whose period does not end a sentence ("Mr. Smith", "Dr. Patel", "approx. 5") */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'st', 'jr', 'sr', 'prof', 'vs', 'etc', 'no', 'inc', 'ltd', 'co', 'mt', 'ft', 'approx', 'dept', 'apt', 'ave', 'blvd', 'rd', 'fig', 'gen', 'gov', 'sen', 'rep', 'capt', 'sgt', 'lt', 'col']);

/** "…Mr." or a number's decimal point: a period that does not end the sentence */
function abbreviation(sentence: string): boolean {
  if (!sentence.endsWith('.')) return false;
  const last = /(\S+)\.$/u.exec(sentence)?.[1] ?? '';
  return /\d$/u.test(last) || last.length === 1 || ABBREVIATIONS.has(last.toLowerCase());
}

/** `noiseless`: no sampling noise, the same audio for the same text (PiperRequest.noiseless). */
export function createPiperTts(opts: { modelsDir?: string; wordsPerMinute?: number; noiseless?: boolean; pool?: () => Promise<ThreadPool<PiperRequest, Int16Array>> } = {}): TtsService {
  const lengthScale = opts.wordsPerMinute ? 175 / opts.wordsPerMinute : 1;
  const getPool = opts.pool ?? (() => piperPool(opts.modelsDir ? { modelsDir: opts.modelsDir } : {}));
  const utterances = new WeakSet<object>();
  return {
    provider: 'local',
    model: PIPER_MODEL,
    voice: PIPER_VOICE,
    lookahead: 1,
    async *synthesize(text: string, signal: AbortSignal, o?: TtsSynthesizeOptions): AsyncIterable<Int16Array> {
      // the first chunk of an utterance (a chunk without one is its own) starts with a short lead piece
      const first = !o?.utterance || !utterances.has(o.utterance);
      if (o?.utterance) utterances.add(o.utterance);
      const lead = first ? leadPiece(text) : null;
      const pieces = (lead ? [lead[0], ...splitClauses(lead[1])] : splitClauses(text)).filter((p) => /[\p{L}\p{N}]/u.test(p));
      if (signal.aborted || pieces.length === 0) return;
      const p = await getPool();
      const resampler = new Resampler(PIPER_RATE, 24000);
      const start = (i: number) => {
        const r = p.run({ text: pieces[i]!, lengthScale, ...(opts.noiseless ? { noiseless: true } : {}) });
        r.catch(() => {}); // awaited below; an abandoned one must not be an unhandled rejection
        return r;
      };
      // the piece after a lead piece is started with it (on another helper when there is one): the lead piece's
      // audio is short, its successor must not leave a gap after it
      const runs = [start(0)];
      if (lead && pieces.length > 1) runs.push(start(1));
      for (let i = 0; i < pieces.length; i++) {
        let pcm: Int16Array;
        try {
          pcm = await runs[i]!;
        } catch (err) {
          if (signal.aborted) return;
          throw engineError(`Piper voice failed: ${(err as Error).message}`, true, false);
        }
        if (signal.aborted) return;
        if (runs.length === i + 1 && runs.length < pieces.length) runs.push(start(i + 1));
        const out = resampler.process(pcm);
        if (out.length) yield out;
        if (signal.aborted) return;
      }
      const tail = resampler.flush();
      if (tail.length) yield tail;
    },
  };
}
