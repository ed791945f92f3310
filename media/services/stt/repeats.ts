// Whisper's decoder loop, seen in its text: on a short audio window it may start the sentence over and again
// ("Can you tell me? Can you tell me? Um... Can you tell me?"). whisper.cpp's own guard (the entropy of the last
// 32 tokens, then a decode at a higher temperature) never sees a loop that short, and @napi-rs/whisper does not
// expose its thresholds, so the recogniser checks the text itself: a run of words said twice over is a loop
// (repeatedRun), decoded again with the whole audio context (whisper-thread.ts); what still repeats is dropped
// (dropRepeatedRuns). Words compare without case and punctuation.

/** Words that repeat in a loop are at least this long a run (a word said three times is speech: "five five five"). */
export const MIN_RUN = 3;

const norm = (w: string) => w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

/** Does a run of MIN_RUN or more words appear twice in the text? */
export function repeatedRun(text: string, n = MIN_RUN): boolean {
  const words = text.split(/\s+/).map(norm).filter(Boolean);
  const seen = new Set<string>();
  for (let i = 0; i + n <= words.length; i++) {
    const key = words.slice(i, i + n).join(' ');
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
}

/**
 * The text with every immediate repetition of a run of MIN_RUN or more words removed, the first saying kept:
 * "a b c x a b c x y" → "a b c x y". A repetition cut short at the end (where the decoder was stopped) goes too.
 */
export function dropRepeatedRuns(text: string): string {
  let words = text.split(/\s+/).filter(Boolean);
  for (let changed = true; changed; ) {
    changed = false;
    const w = words.map(norm);
    outer: for (let len = Math.floor(w.length / 2); len >= MIN_RUN; len--) {
      for (let i = 0; i + 2 * len <= w.length; i++) {
        let same = true;
        for (let k = 0; k < len && same; k++) same = w[i + k] === w[i + len + k];
        if (same) {
          words = [...words.slice(0, i + len), ...words.slice(i + 2 * len)];
          changed = true;
          break outer;
        }
      }
    }
  }
  // a tail that starts the text over (the decoder stopped inside the next repetition)
  const w = words.map(norm);
  for (let i = 1; i + MIN_RUN <= w.length; i++) {
    let k = 0;
    while (i + k < w.length && w[i + k] === w[k]) k++;
    if (i + k === w.length && k >= MIN_RUN) {
      words = words.slice(0, i);
      break;
    }
  }
  return words.join(' ');
}
