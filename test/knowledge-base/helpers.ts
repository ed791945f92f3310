// Helpers of the knowledge-base tests: real documents built by libraries, raw multipart bodies, waiting for a file.
import { randomBytes } from 'node:crypto';
import PDFDocument from 'pdfkit';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow, TextRun } from 'docx';
import { createLogger } from '../../core/logger.ts';
import type { TestServer } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';

export const logger = createLogger({ level: 'silent' });

/** A 3-page PDF (one paragraph per page) built with pdfkit. */
export function buildPdf(pages: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ autoFirstPage: false });
    const chunks: Buffer[] = [];
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
    for (const text of pages) {
      doc.addPage();
      doc.fontSize(12).text(text, { width: 450 });
    }
    doc.end();
  });
}

/** A DOCX with a title, two sections and a table, built with the docx library. */
export function buildDocx(sections: { heading: string; level: 1 | 2; paragraphs: string[] }[], table?: string[][]): Promise<Buffer> {
  const children: (Paragraph | Table)[] = [];
  for (const s of sections) {
    children.push(new Paragraph({ text: s.heading, heading: s.level === 1 ? HeadingLevel.HEADING_1 : HeadingLevel.HEADING_2 }));
    for (const p of s.paragraphs) children.push(new Paragraph({ children: [new TextRun(p)] }));
  }
  if (table) {
    children.push(new Table({ rows: table.map((r) => new TableRow({ children: r.map((c) => new TableCell({ children: [new Paragraph(c)] })) })) }));
  }
  return Packer.toBuffer(new Document({ sections: [{ children }] }));
}

export interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  contentType?: string;
}

/** A raw multipart/form-data body (so tests control every byte: empty filenames, field order, sizes). */
export function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----vas${randomBytes(8).toString('hex')}`;
  const buffers: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType || p.filename !== undefined) head += `Content-Type: ${p.contentType ?? 'application/octet-stream'}\r\n`;
    buffers.push(Buffer.from(`${head}\r\n`), Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value), Buffer.from('\r\n'));
  }
  buffers.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(buffers), contentType: `multipart/form-data; boundary=${boundary}` };
}

export async function upload(s: TestServer, parts: Part[], key?: string): Promise<{ status: number; body: any }> {
  const { body, contentType } = multipart(parts);
  const headers: Record<string, string> = { 'content-type': contentType };
  if (key !== null) headers['x-api-key'] = key ?? '';
  const res = await fetch(`${s.baseUrl}/files`, { method: 'POST', headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}

/** Polls GET /files/{id} until the file leaves pending/processing. */
export async function waitProcessed(s: TestServer, id: string, key: string, timeoutMs = 60_000): Promise<any> {
  return until(async () => {
    const r = await s.request('GET', `/files/${id}`, { key });
    return r.status === 200 && (r.body.status === 'completed' || r.body.status === 'failed') ? r.body : null;
  }, { what: `file ${id} processed`, timeoutMs, everyMs: 100 });
}

