// Text extraction: a stored file → a stream of structural blocks (headings, paragraphs, rows, page breaks) for
// core/documents/chunking.ts. Text formats (txt, md, csv) are streamed line by line / record by record so a
// 100 MB upload never sits in memory; pdf, docx, doc and json need the whole file (one document at a time).
// Every failure a user can fix (corrupt file, bad JSON/CSV) is an ExtractionError with a readable message.
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse';
import type { Block } from '../../core/documents/chunking.ts';

export const DOCUMENT_FORMATS = ['pdf', 'docx', 'doc', 'txt', 'json', 'md', 'csv'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

export class ExtractionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExtractionError';
  }
}

export interface ExtractSource {
  stream(): Promise<NodeJS.ReadableStream>;
  buffer(): Promise<Buffer>;
}

export function formatOf(name: string): DocumentFormat | null {
  const dot = name.lastIndexOf('.');
  const ext = dot >= 0 ? name.slice(dot + 1).toLowerCase() : '';
  return (DOCUMENT_FORMATS as readonly string[]).includes(ext) ? (ext as DocumentFormat) : null;
}

/** Paragraphs longer than this are yielded early (the chunker splits them further). */
const MAX_PARAGRAPH = 8000;

async function* lines(stream: NodeJS.ReadableStream): AsyncGenerator<string> {
  const rl = createInterface({ input: Readable.from(stream as AsyncIterable<Buffer>), crlfDelay: Infinity });
  let first = true;
  for await (const line of rl) {
    yield first ? line.replace(/^\uFEFF/, '') : line;
    first = false;
  }
}

/** Plain text and Markdown: blank lines separate paragraphs; Markdown ATX headings become heading blocks. */
export async function* textBlocks(input: AsyncIterable<string> | Iterable<string>, markdown: boolean): AsyncGenerator<Block> {
  let para: string[] = [];
  let size = 0;
  let fence: string | null = null;
  const flush = function* (): Generator<Block> {
    if (para.length) yield { kind: 'paragraph', text: para.join('\n') };
    para = [];
    size = 0;
  };
  for await (const raw of input) {
    const line = raw.replace(/\s+$/, '');
    if (markdown) {
      const fenceMatch = /^\s*(```|~~~)/.exec(line);
      if (fenceMatch) {
        fence = fence ? null : fenceMatch[1]!;
        continue;
      }
      if (!fence) {
        const h = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
        if (h) {
          yield* flush();
          yield { kind: 'heading', level: h[1]!.length, text: h[2]! };
          continue;
        }
        if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
          yield* flush();
          continue;
        }
      }
    }
    if (!line.trim() && !fence) {
      yield* flush();
      continue;
    }
    para.push(markdown ? line.replace(/^\s{0,3}>\s?/, '') : line);
    size += line.length + 1;
    if (size > MAX_PARAGRAPH) yield* flush();
  }
  yield* flush();
}

const cell = (v: unknown) => String(v ?? '').replace(/\s+/g, ' ').trim();

/** CSV: the first record is the header; every data row becomes "column: value; column: value". */
export async function* csvBlocks(stream: NodeJS.ReadableStream): AsyncGenerator<Block> {
  const parser = Readable.from(stream as AsyncIterable<Buffer>).pipe(
    parseCsv({ bom: true, relax_column_count: true, skip_empty_lines: true, trim: true }),
  );
  let header: string[] | null = null;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!header) {
        header = record.map((h, i) => cell(h) || `column ${i + 1}`);
        continue;
      }
      const parts = record
        .map((v, i) => [header![i] ?? `column ${i + 1}`, cell(v)] as const)
        .filter(([, v]) => v !== '')
        .map(([k, v]) => `${k}: ${v}`);
      if (parts.length) yield { kind: 'row', text: parts.join('; ') };
    }
  } catch (err) {
    throw new ExtractionError(`Invalid CSV: ${(err as Error).message}`);
  }
}

function flattenJson(value: unknown, path: string, out: string[]): void {
  if (value === null || typeof value !== 'object') {
    out.push(path ? `${path}: ${cell(value)}` : cell(value));
    return;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [`${path}[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [path ? `${path}.${k}` : k, v] as const);
  for (const [p, v] of entries) flattenJson(v, p, out);
}

function jsonItem(value: unknown): string {
  const out: string[] = [];
  flattenJson(value, '', out);
  return out.join('; ');
}

/** JSON: a top-level array gives one row per item; an object gives one section per top-level key. */
export function* jsonBlocks(text: string): Generator<Block> {
  let doc: unknown;
  try {
    doc = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new ExtractionError(`Invalid JSON: ${(err as Error).message}`);
  }
  if (Array.isArray(doc)) {
    for (const item of doc) yield { kind: 'row', text: jsonItem(item) };
    return;
  }
  if (doc === null || typeof doc !== 'object') {
    yield { kind: 'paragraph', text: cell(doc) };
    return;
  }
  for (const [key, value] of Object.entries(doc)) {
    yield { kind: 'heading', level: 1, text: key };
    if (Array.isArray(value) && value.some((v) => v !== null && typeof v === 'object')) {
      for (const item of value) yield { kind: 'row', text: jsonItem(item) };
    } else if (value !== null && typeof value === 'object') {
      const out: string[] = [];
      flattenJson(value, '', out);
      for (const line of out) yield { kind: 'row', text: line };
    } else {
      yield { kind: 'paragraph', text: cell(value) };
    }
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? Number.parseInt(e.slice(2), 16) : Number.parseInt(e.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}
const stripTags = (s: string) => decodeEntities(s.replace(/<br\s*\/?>/gi, '\n').replace(/<[^>]+>/g, ''));

/** The simple, well-formed HTML mammoth produces: headings, paragraphs, list items, table rows. */
export function* htmlBlocks(html: string): Generator<Block> {
  const re = /<(h[1-6]|p|li|tr)\b[^>]*>([\s\S]*?)<\/\1>/gi;
  for (let m = re.exec(html); m; m = re.exec(html)) {
    const tag = m[1]!.toLowerCase();
    const inner = m[2]!;
    if (tag[0] === 'h') yield { kind: 'heading', level: Number(tag[1]), text: stripTags(inner) };
    else if (tag === 'tr') {
      const cells = inner.split(/<\/t[dh]>/i).map(stripTags).map((c) => c.replace(/\s+/g, ' ').trim()).filter(Boolean);
      if (cells.length) yield { kind: 'row', text: cells.join(' | ') };
    } else yield { kind: 'paragraph', text: tag === 'li' ? `- ${stripTags(inner)}` : stripTags(inner) };
  }
}

async function* pdfBlocks(buf: Buffer): AsyncGenerator<Block> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  let pages: string[];
  try {
    const pdf = await getDocumentProxy(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength));
    pages = (await extractText(pdf, { mergePages: false })).text;
    await pdf.destroy();
  } catch (err) {
    throw new ExtractionError(`Could not read PDF: ${(err as Error).message}`);
  }
  for (const page of pages) {
    yield { kind: 'break' };
    for (const para of page.split(/\n\s*\n/)) {
      const text = para.replace(/-\n(?=\p{Ll})/gu, '').replace(/\s*\n\s*/g, ' ');
      if (text.trim()) yield { kind: 'paragraph', text };
    }
  }
}

async function* docxBlocks(buf: Buffer): AsyncGenerator<Block> {
  const mammoth = (await import('mammoth')).default;
  let html: string;
  try {
    html = (await mammoth.convertToHtml({ buffer: buf })).value;
  } catch (err) {
    throw new ExtractionError(`Could not read DOCX: ${(err as Error).message}`);
  }
  yield* htmlBlocks(html);
}

async function* docBlocks(buf: Buffer): AsyncGenerator<Block> {
  const WordExtractor = (await import('word-extractor')).default;
  let body: string;
  try {
    body = (await new WordExtractor().extract(buf)).getBody();
  } catch (err) {
    throw new ExtractionError(`Could not read legacy Word (.doc) file: ${(err as Error).message}`);
  }
  yield* textBlocks(body.split(/\r\n|\r|\n/), false);
}

export async function* extractBlocks(format: DocumentFormat, source: ExtractSource): AsyncGenerator<Block> {
  switch (format) {
    case 'txt':
      yield* textBlocks(lines(await source.stream()), false);
      return;
    case 'md':
      yield* textBlocks(lines(await source.stream()), true);
      return;
    case 'csv':
      yield* csvBlocks(await source.stream());
      return;
    case 'json':
      yield* jsonBlocks((await source.buffer()).toString('utf8'));
      return;
    case 'pdf':
      yield* pdfBlocks(await source.buffer());
      return;
    case 'docx':
      yield* docxBlocks(await source.buffer());
      return;
    case 'doc':
      yield* docBlocks(await source.buffer());
      return;
  }
}
