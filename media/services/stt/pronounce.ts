// Pronunciations for the local recogniser's dictionary: the CMU dictionary shipped with the PocketSphinx model,
// and for words it lacks (names, brands, key terms) a grapheme-to-phoneme guess from eSpeak NG's IPA output
// mapped onto the ARPAbet phone set the acoustic model uses.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';

const cmudicts = new Map<string, Promise<Map<string, string[]>>>();

/** The CMU dictionary (word → pronunciations), loaded once per process and path. */
export function loadCmudict(path: string): Promise<Map<string, string[]>> {
  let cmudict = cmudicts.get(path);
  if (cmudict) return cmudict;
  cmudict = readFile(path, 'utf8').then((text) => {
    const map = new Map<string, string[]>();
    for (const line of text.split('\n')) {
      const sp = line.indexOf(' ');
      if (sp <= 0) continue;
      const word = line.slice(0, sp).replace(/\(\d+\)$/, '');
      const phones = line.slice(sp + 1).trim();
      const list = map.get(word);
      if (list) list.push(phones);
      else map.set(word, [phones]);
    }
    return map;
  });
  cmudict.catch(() => cmudicts.delete(path));
  cmudicts.set(path, cmudict);
  return cmudict;
}

// IPA (as eSpeak NG writes it for English) → ARPAbet. Longest match first.
const IPA: [string, string][] = (
  [
    ['aɪ', 'AY'], ['aʊ', 'AW'], ['eɪ', 'EY'], ['oʊ', 'OW'], ['əʊ', 'OW'], ['ɔɪ', 'OY'],
    ['tʃ', 'CH'], ['dʒ', 'JH'], ['ɑː', 'AA'], ['ɔː', 'AO'], ['uː', 'UW'], ['iː', 'IY'], ['ɜː', 'ER'],
    ['ɑ', 'AA'], ['ɒ', 'AA'], ['ɔ', 'AO'], ['u', 'UW'], ['ʊ', 'UH'], ['i', 'IY'], ['ɪ', 'IH'], ['ᵻ', 'IH'],
    ['ɛ', 'EH'], ['e', 'EH'], ['æ', 'AE'], ['a', 'AE'], ['ʌ', 'AH'], ['ə', 'AH'], ['ɐ', 'AH'], ['ɚ', 'ER'],
    ['ɜ', 'ER'], ['o', 'OW'], ['θ', 'TH'], ['ð', 'DH'], ['ʃ', 'SH'], ['ʒ', 'ZH'], ['ŋ', 'NG'], ['ɹ', 'R'],
    ['r', 'R'], ['ɾ', 'T'], ['ʔ', 'T'], ['j', 'Y'], ['w', 'W'], ['h', 'HH'], ['l', 'L'], ['ɫ', 'L'],
    ['m', 'M'], ['n', 'N'], ['p', 'P'], ['b', 'B'], ['t', 'T'], ['d', 'D'], ['k', 'K'], ['ɡ', 'G'],
    ['g', 'G'], ['f', 'F'], ['v', 'V'], ['s', 'S'], ['z', 'Z'], ['x', 'K'], ['ç', 'HH'],
  ] as [string, string][]
).sort((a, b) => b[0].length - a[0].length);

/** Map one word's IPA (eSpeak NG style) to ARPAbet phones; unknown symbols (stress, length, ties) are skipped. */
export function ipaToArpabet(ipa: string): string[] {
  const out: string[] = [];
  let i = 0;
  outer: while (i < ipa.length) {
    for (const [sym, phone] of IPA) {
      if (ipa.startsWith(sym, i)) {
        out.push(phone);
        i += sym.length;
        continue outer;
      }
    }
    i++; // ˈ ˌ ː . - diacritics
  }
  return out;
}

/** Guess pronunciations with eSpeak NG (one process for all words). Words it cannot voice are left out. */
export function espeakPronunciations(words: string[], voice = 'en-us'): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  if (words.length === 0) return Promise.resolve(result);
  return new Promise((resolve) => {
    // One word per line; --ipa writes one line of IPA per input clause.
    execFile('espeak-ng', ['-q', '--ipa', '-v', voice, '--stdin'], { timeout: 10_000 }, (err, stdout) => {
      if (err) return resolve(result);
      const lines = stdout.split('\n').map((l) => l.trim()).filter(Boolean);
      if (lines.length === words.length) {
        words.forEach((w, i) => {
          const phones = ipaToArpabet(lines[i]!);
          if (phones.length) result.set(w, phones.join(' '));
        });
      }
      resolve(result);
    }).stdin?.end(words.map((w) => `${w}.`).join('\n') + '\n');
  });
}

/**
 * A dictionary file's text for these words (CMU pronunciations, eSpeak guesses for the rest) and the set of
 * words that got one.
 */
export async function buildDictionary(words: Iterable<string>, cmudictPath: string): Promise<{ text: string; known: Set<string> }> {
  const dict = await loadCmudict(cmudictPath);
  const lines: string[] = [];
  const known = new Set<string>();
  const missing: string[] = [];
  for (const w of new Set(words)) {
    const prons = dict.get(w);
    if (!prons) {
      if (/^[a-z']+$/.test(w)) missing.push(w);
      continue;
    }
    known.add(w);
    prons.forEach((p, i) => lines.push(`${w}${i ? `(${i + 1})` : ''} ${p}`));
  }
  const guessed = await espeakPronunciations(missing);
  for (const [w, p] of guessed) {
    known.add(w);
    lines.push(`${w} ${p}`);
  }
  return { text: lines.join('\n') + '\n', known };
}
