// The pure parts of ingestion: structure-aware chunking with overlap, row packing, full_document mode, and the
// extractors for text formats (no database, no Temporal).
import test from 'ava';
import fc from 'fast-check';
import { Chunker, DocumentTooLargeError, FullDocumentCollector, overlapTail, splitLong, type Block } from '../../core/documents/chunking.ts';
import { detectTsConfig } from '../../core/documents/language.ts';
import { csvBlocks, htmlBlocks, jsonBlocks, textBlocks } from '../../activities/extract/index.ts';
import { Readable } from 'node:stream';

const chunkAll = (blocks: Block[], opts = {}) => {
  const c = new Chunker(opts);
  return [...blocks.flatMap((b) => c.push(b)), ...c.end()];
};
const collect = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

test('paragraphs pack up to the target and consecutive chunks of a section overlap', (t) => {
  const para = (i: number) => `Sentence ${i} one is here. Sentence ${i} two follows it. Sentence ${i} three ends the paragraph.`;
  const blocks: Block[] = [{ kind: 'heading', level: 1, text: 'Guide' }, ...Array.from({ length: 12 }, (_, i) => ({ kind: 'paragraph' as const, text: para(i) }))];
  const chunks = chunkAll(blocks, { targetChars: 300, overlapChars: 60 });
  t.true(chunks.length > 3);
  t.deepEqual(chunks.map((c) => c.index), chunks.map((_, i) => i));
  for (const c of chunks) t.true(c.content.startsWith('Guide\n'));
  for (let i = 1; i < chunks.length; i++) {
    const tail = overlapTail(chunks[i - 1]!.content.slice('Guide\n'.length), 60);
    t.true(tail.length > 0);
    t.true(chunks[i]!.content.slice('Guide\n'.length).startsWith(tail), `chunk ${i} starts with the previous tail`);
  }
});

test('headings and page breaks close chunks; no overlap across sections', (t) => {
  const chunks = chunkAll([
    { kind: 'heading', level: 1, text: 'A' },
    { kind: 'paragraph', text: 'alpha text.' },
    { kind: 'heading', level: 2, text: 'B' },
    { kind: 'paragraph', text: 'beta text.' },
    { kind: 'break' },
    { kind: 'paragraph', text: 'gamma text.' },
    { kind: 'heading', level: 1, text: 'C' },
    { kind: 'heading', level: 2, text: 'D' },
    { kind: 'paragraph', text: 'delta text.' },
  ]);
  t.deepEqual(chunks.map((c) => c.content), ['A\nalpha text.', 'A > B\nbeta text.', 'A > B\ngamma text.', 'C > D\ndelta text.']);
});

test('rows pack rowsPerChunk at a time without overlap; prose after rows starts a new chunk', (t) => {
  const rows: Block[] = Array.from({ length: 7 }, (_, i) => ({ kind: 'row', text: `id: ${i}` }));
  const chunks = chunkAll([...rows, { kind: 'paragraph', text: 'after the table' }], { rowsPerChunk: 3 });
  t.deepEqual(chunks.map((c) => c.content), ['id: 0\nid: 1\nid: 2', 'id: 3\nid: 4\nid: 5', 'id: 6', 'after the table']);
});

test('long paragraphs split at sentences, then words; nothing is lost; chunking is deterministic', (t) => {
  fc.assert(
    fc.property(fc.array(fc.stringMatching(/^[a-z]{1,12}[.]?$/), { minLength: 1, maxLength: 600 }), (words) => {
      const text = words.join(' ');
      const pieces = splitLong(text, 200);
      for (const p of pieces) if (p.length > 200) return false;
      if (pieces.join(' ').replace(/\s+/g, ' ') !== text.replace(/\s+/g, ' ').trim()) return false;
      const blocks: Block[] = [{ kind: 'paragraph', text }];
      const a = chunkAll(blocks, { targetChars: 150, maxChars: 200, overlapChars: 40 });
      const b = chunkAll(blocks, { targetChars: 150, maxChars: 200, overlapChars: 40 });
      if (JSON.stringify(a) !== JSON.stringify(b)) return false;
      const all = a.map((c) => c.content).join(' ');
      return words.every((w) => all.includes(w));
    }),
  );
  t.pass();
});

test('full_document: one unit, refused beyond its limit', (t) => {
  const f = new FullDocumentCollector(50);
  f.push({ kind: 'heading', level: 2, text: 'Title' });
  f.push({ kind: 'paragraph', text: 'Short body.' });
  t.deepEqual(f.end(), [{ index: 0, content: '## Title\n\nShort body.', heading: null }]);
  const big = new FullDocumentCollector(50);
  t.throws(() => big.push({ kind: 'paragraph', text: 'x'.repeat(60) }), { instanceOf: DocumentTooLargeError });
});

test('extractors: markdown, CSV, JSON, HTML from mammoth', async (t) => {
  const md = await collect(textBlocks(['# T', '', 'a', 'b', '', '> quoted', '---', '```', '# code', '```'], true));
  t.deepEqual(md, [
    { kind: 'heading', level: 1, text: 'T' },
    { kind: 'paragraph', text: 'a\nb' },
    { kind: 'paragraph', text: 'quoted' },
    { kind: 'paragraph', text: '# code' },
  ]);
  const csv = await collect(csvBlocks(Readable.from(['\uFEFFname,city\n"Doe, J",Paris\n\nAnn,\n'])));
  t.deepEqual(csv, [{ kind: 'row', text: 'name: Doe, J; city: Paris' }, { kind: 'row', text: 'name: Ann' }]);
  await t.throwsAsync(collect(csvBlocks(Readable.from(['a,b\n"unterminated,1\n']))), { message: /^Invalid CSV: / });
  t.deepEqual([...jsonBlocks('[{"a":1,"b":{"c":"x"}}]')], [{ kind: 'row', text: 'a: 1; b.c: x' }]);
  t.throws(() => [...jsonBlocks('{')], { message: /^Invalid JSON: / });
  t.deepEqual([...htmlBlocks('<h2>Fees &amp; costs</h2><p>Pay <strong>now</strong></p><ul><li>one</li></ul><table><tr><td><p>k</p></td><td><p>v</p></td></tr></table>')], [
    { kind: 'heading', level: 2, text: 'Fees & costs' },
    { kind: 'paragraph', text: 'Pay now' },
    { kind: 'paragraph', text: '- one' },
    { kind: 'row', text: 'k | v' },
  ]);
});

test('language detection picks the PostgreSQL text-search configuration', (t) => {
  t.is(detectTsConfig('The clinic is open from Monday to Friday and closed on public holidays.'), 'english');
  t.is(detectTsConfig('La clínica está abierta de lunes a viernes y cerrada los días festivos nacionales.'), 'spanish');
  t.is(detectTsConfig('Die Praxis ist von Montag bis Freitag geöffnet und an Feiertagen geschlossen.'), 'german');
  t.is(detectTsConfig('Hi'), 'english');
  t.is(detectTsConfig('Die Praxis ist von Montag bis Freitag geöffnet und an Feiertagen geschlossen.', new Set(['english', 'simple'])), 'simple');
});
