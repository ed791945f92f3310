// Structure-aware chunking of extracted documents (pure, incremental, deterministic).
// Extractors turn a file into a stream of blocks (headings, paragraphs, table/CSV rows, page breaks); the
// Chunker turns blocks into retrievable chunks:
//   - a heading or a page break always closes the current chunk (sections never share a chunk); every chunk
//     starts with its heading path ("Title > Section") so headings are searchable and passages keep context;
//   - paragraphs are packed up to `targetChars`; a paragraph longer than `maxChars` is split at sentence, then
//     word boundaries; consecutive chunks of one section overlap by up to `overlapChars` (sentence/word
//     aligned tail of the previous chunk);
//   - rows (CSV lines, table rows, JSON array items) are packed `rowsPerChunk` at a time (or up to
//     `maxChars`); rows are self-contained records ("column: value; ..."), so they do not overlap.
// The same blocks always give the same chunks, which is what makes re-running an ingestion idempotent.

export type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'row'; text: string }
  | { kind: 'break' };

export interface ChunkOptions {
  targetChars: number;
  maxChars: number;
  overlapChars: number;
  rowsPerChunk: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { targetChars: 1200, maxChars: 2000, overlapChars: 200, rowsPerChunk: 25 };

/** `full_document` mode: the whole text is one unit; beyond this it cannot sensibly be handed to an LLM. */
export const FULL_DOCUMENT_MAX_CHARS = 200_000;

export interface Chunk {
  index: number;
  content: string;
  heading: string | null;
}

/** Rough token estimate (about 4 characters per token for Latin text), used for retrieval budgets. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

const normalizeSpace = (s: string) => s.replace(/[ \t\f\v\u00a0]+/g, ' ').replace(/ *\n */g, '\n').trim();

/** Splits text longer than max at sentence boundaries, then at word boundaries, then hard. */
export function splitLong(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const sentences = text.split(/(?<=[.!?。！？])\s+/);
  const out: string[] = [];
  let cur = '';
  const pushPiece = (piece: string) => {
    if (piece.length > max) {
      if (cur) { out.push(cur); cur = ''; }
      let rest = piece;
      while (rest.length > max) {
        let cut = rest.lastIndexOf(' ', max);
        if (cut < max / 2) cut = max;
        out.push(rest.slice(0, cut).trim());
        rest = rest.slice(cut).trim();
      }
      cur = rest;
      return;
    }
    if (cur && cur.length + 1 + piece.length > max) {
      out.push(cur);
      cur = piece;
    } else {
      cur = cur ? `${cur} ${piece}` : piece;
    }
  };
  for (const s of sentences) pushPiece(s);
  if (cur) out.push(cur);
  return out.filter((p) => p.length > 0);
}

/** The tail of a chunk body used as the next chunk's overlap, starting at a sentence (else word) boundary. */
export function overlapTail(text: string, overlapChars: number): string {
  if (overlapChars <= 0 || !text) return '';
  if (text.length <= overlapChars) return text;
  const tail = text.slice(text.length - overlapChars);
  const sentence = tail.search(/(?<=[.!?])\s+\S/);
  if (sentence >= 0) return tail.slice(sentence).trim();
  const space = tail.indexOf(' ');
  return space >= 0 ? tail.slice(space + 1).trim() : tail.trim();
}

export class Chunker {
  private readonly opts: ChunkOptions;
  private headings: { level: number; text: string }[] = [];
  private parts: string[] = [];
  private mode: 'prose' | 'rows' = 'prose';
  private fresh = false; // has content beyond the overlap carried from the previous chunk
  private next = 0;

  constructor(opts: Partial<ChunkOptions> = {}) {
    this.opts = { ...DEFAULT_CHUNKING, ...opts };
  }

  get emitted(): number {
    return this.next;
  }

  private headingLine(): string | null {
    return this.headings.length ? this.headings.map((h) => h.text).join(' > ') : null;
  }

  private bodyLength(): number {
    return this.parts.reduce((n, p) => n + p.length + 2, 0);
  }

  private emit(out: Chunk[], withOverlap: boolean): void {
    if (!this.fresh) {
      this.parts = [];
      return;
    }
    const body = this.parts.join(this.mode === 'rows' ? '\n' : '\n\n');
    const heading = this.headingLine();
    out.push({ index: this.next++, content: heading ? `${heading}\n${body}` : body, heading });
    const carry = withOverlap && this.mode === 'prose' ? overlapTail(body, this.opts.overlapChars) : '';
    this.parts = carry ? [carry] : [];
    this.fresh = false;
  }

  push(block: Block): Chunk[] {
    const out: Chunk[] = [];
    switch (block.kind) {
      case 'break':
        this.emit(out, false);
        this.parts = [];
        break;
      case 'heading': {
        const text = normalizeSpace(block.text).replace(/\n/g, ' ');
        this.emit(out, false);
        this.parts = [];
        if (!text) break;
        while (this.headings.length && this.headings[this.headings.length - 1]!.level >= block.level) this.headings.pop();
        this.headings.push({ level: block.level, text: text.slice(0, 300) });
        break;
      }
      case 'paragraph': {
        const text = normalizeSpace(block.text);
        if (!text) break;
        if (this.mode === 'rows') {
          this.emit(out, false);
          this.parts = [];
          this.mode = 'prose';
        }
        for (const piece of splitLong(text, this.opts.maxChars)) {
          if (this.fresh && this.bodyLength() + piece.length > this.opts.targetChars) this.emit(out, true);
          else if (!this.fresh && this.parts.length && this.bodyLength() + piece.length > this.opts.maxChars) this.parts = [];
          this.parts.push(piece);
          this.fresh = true;
        }
        break;
      }
      case 'row': {
        const text = normalizeSpace(block.text).replace(/\n/g, ' ');
        if (!text) break;
        if (this.mode === 'prose') {
          this.emit(out, false);
          this.parts = [];
          this.mode = 'rows';
        }
        for (const piece of splitLong(text, this.opts.maxChars)) {
          if (this.fresh && (this.parts.length >= this.opts.rowsPerChunk || this.bodyLength() + piece.length > this.opts.maxChars)) {
            this.emit(out, false);
          }
          this.parts.push(piece);
          this.fresh = true;
        }
        break;
      }
    }
    return out;
  }

  end(): Chunk[] {
    const out: Chunk[] = [];
    this.emit(out, false);
    return out;
  }
}

export class DocumentTooLargeError extends Error {
  constructor(limit: number) {
    super(`Document is too large for full_document mode (more than ${limit} characters); use retrievalMode 'chunked'`);
    this.name = 'DocumentTooLargeError';
  }
}

/** `full_document` mode: all blocks rendered into a single chunk (headings as lines, rows one per line). */
export class FullDocumentCollector {
  private parts: string[] = [];
  private size = 0;
  constructor(private readonly maxChars = FULL_DOCUMENT_MAX_CHARS) {}

  push(block: Block): void {
    if (block.kind === 'break') return;
    const text = normalizeSpace(block.text);
    if (!text) return;
    const rendered = block.kind === 'heading' ? `${'#'.repeat(Math.min(Math.max(block.level, 1), 6))} ${text}` : text;
    this.size += rendered.length + 2;
    if (this.size > this.maxChars) throw new DocumentTooLargeError(this.maxChars);
    this.parts.push(rendered);
  }

  end(): Chunk[] {
    if (!this.parts.length) return [];
    return [{ index: 0, content: this.parts.join('\n\n'), heading: null }];
  }
}
