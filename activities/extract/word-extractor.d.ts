declare module 'word-extractor' {
  interface WordDocument {
    getBody(): string;
    getHeaders(opts?: { includeFooters?: boolean }): string;
    getFootnotes(): string;
  }
  export default class WordExtractor {
    extract(input: string | Buffer): Promise<WordDocument>;
  }
}
