// A small trigram language model, written as ARPA text, for the local recogniser (PocketSphinx).
//
// PocketSphinx recognises synthesized and telephone speech poorly with its 130k-word general model. A small
// model over the words this agent is likely to hear (a base vocabulary of phone-call English plus the agent's
// key terms and the words of its prompt) narrows the search enough to make it useful. The model is an
// absolute-discounting backoff trigram (Ney et al.), normalised so that every history's distribution sums to 1;
// key terms get extra unigram mass and their phrases are added as n-grams several times so they are preferred.

export interface LmInput {
  /** Sentences (already tokenised or raw text). */
  sentences: string[];
  /** Key terms (single words or phrases) to bias towards. */
  keyterms: string[];
  /** How many times each key-term phrase is added to the corpus (bias strength). */
  keytermWeight?: number;
}

export interface LanguageModel {
  arpa: string;
  /** Vocabulary (lower-case words, without <s> </s>). */
  words: string[];
}

/** Lower-case words of a text, as the recogniser's dictionary spells them (letters, digits, apostrophes). */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[’`]/g, "'")
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter((w) => w.length > 0);
}

const DISCOUNT = 0.5;

type Counts = Map<string, number>;

function add(map: Counts, key: string, n = 1): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

const log10 = (p: number) => (p <= 0 ? -99 : Math.log10(p));
const fmt = (x: number) => x.toFixed(4);

/**
 * Build the model. Words not accepted by `inVocabulary` (no pronunciation) are dropped from sentences, which
 * splits them there.
 */
export function buildLanguageModel(input: LmInput, inVocabulary: (w: string) => boolean = () => true): LanguageModel {
  const weight = input.keytermWeight ?? 3;
  const sentences: string[][] = [];
  const push = (words: string[]) => {
    // split at out-of-vocabulary words
    let cur: string[] = [];
    for (const w of words) {
      if (inVocabulary(w)) cur.push(w);
      else if (cur.length) {
        sentences.push(cur);
        cur = [];
      }
    }
    if (cur.length) sentences.push(cur);
  };
  for (const s of input.sentences) {
    // sentence boundaries inside a paragraph
    for (const part of s.split(/[.!?;:\n]+/)) push(tokenize(part));
  }
  const keyWords = new Set<string>();
  for (const k of input.keyterms) {
    const words = tokenize(k);
    for (const w of words) if (inVocabulary(w)) keyWords.add(w);
    for (let i = 0; i < weight; i++) push(words);
  }

  const uni: Counts = new Map();
  const bi: Counts = new Map(); // "a b"
  const tri: Counts = new Map(); // "a b c"
  for (const s of sentences) {
    const t = ['<s>', ...s, '</s>'];
    for (let i = 0; i < t.length; i++) {
      if (i > 0) add(uni, t[i]!); // <s> gets no unigram count
      if (i >= 1) add(bi, `${t[i - 1]} ${t[i]}`);
      if (i >= 2) add(tri, `${t[i - 2]} ${t[i - 1]} ${t[i]}`);
    }
  }
  for (const w of keyWords) add(uni, w, 2 * weight);

  // Unigrams: add-one-half smoothed over the vocabulary (no zero probabilities for in-vocabulary words).
  const vocab = [...uni.keys()].filter((w) => w !== '</s>');
  const total = [...uni.values()].reduce((a, b) => a + b, 0);
  const V = uni.size;
  const pUni = new Map<string, number>();
  for (const [w, c] of uni) pUni.set(w, (c + 0.5) / (total + 0.5 * V));

  // Bigrams: absolute discounting with backoff to unigrams.
  const histBi = new Map<string, { count: number; followers: string[] }>();
  for (const [k, c] of bi) {
    const [h, w] = k.split(' ') as [string, string];
    const e = histBi.get(h) ?? { count: 0, followers: [] };
    e.count += c;
    e.followers.push(w);
    histBi.set(h, e);
  }
  const pBi = new Map<string, number>();
  const bowUni = new Map<string, number>(); // backoff weight of a unigram history
  for (const [h, e] of histBi) {
    let seen = 0;
    let seenLower = 0;
    for (const w of e.followers) {
      const p = (bi.get(`${h} ${w}`)! - DISCOUNT) / e.count;
      pBi.set(`${h} ${w}`, p);
      seen += p;
      seenLower += pUni.get(w) ?? 0;
    }
    bowUni.set(h, (1 - seen) / Math.max(1e-9, 1 - seenLower));
  }
  const probBi = (h: string, w: string): number =>
    pBi.get(`${h} ${w}`) ?? (bowUni.get(h) ?? 1) * (pUni.get(w) ?? 0);

  // Trigrams.
  const histTri = new Map<string, { count: number; followers: string[] }>();
  for (const [k, c] of tri) {
    const [a, b, w] = k.split(' ') as [string, string, string];
    const h = `${a} ${b}`;
    const e = histTri.get(h) ?? { count: 0, followers: [] };
    e.count += c;
    e.followers.push(w);
    histTri.set(h, e);
  }
  const pTri = new Map<string, number>();
  const bowBi = new Map<string, number>();
  for (const [h, e] of histTri) {
    const b = h.split(' ')[1]!;
    let seen = 0;
    let seenLower = 0;
    for (const w of e.followers) {
      const p = (tri.get(`${h} ${w}`)! - DISCOUNT) / e.count;
      pTri.set(`${h} ${w}`, p);
      seen += p;
      seenLower += probBi(b, w);
    }
    bowBi.set(h, (1 - seen) / Math.max(1e-9, 1 - seenLower));
  }

  const lines: string[] = ['\\data\\', `ngram 1=${V + 1}`, `ngram 2=${pBi.size}`, `ngram 3=${pTri.size}`, '', '\\1-grams:'];
  lines.push(`-99.0000 <s> ${fmt(log10(bowUni.get('<s>') ?? 1))}`);
  for (const [w, p] of pUni) {
    const bow = bowUni.get(w);
    lines.push(`${fmt(log10(p))} ${w}${bow !== undefined ? ` ${fmt(log10(bow))}` : ''}`);
  }
  lines.push('', '\\2-grams:');
  for (const [k, p] of pBi) {
    const bow = bowBi.get(k);
    lines.push(`${fmt(log10(p))} ${k}${bow !== undefined ? ` ${fmt(log10(bow))}` : ''}`);
  }
  lines.push('', '\\3-grams:');
  for (const [k, p] of pTri) lines.push(`${fmt(log10(p))} ${k}`);
  lines.push('', '\\end\\', '');
  return { arpa: lines.join('\n'), words: vocab.sort() };
}
