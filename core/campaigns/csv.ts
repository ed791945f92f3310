// Contact CSV validation and parsing (csv-parse + libphonenumber-js): a `phone_number` column is required, the file
// must be well formed, every number is normalised to E.164; the other columns become the row's context variables
// (the agent's {{placeholders}}). Errors are 400 messages that name the row and column.
import { parse } from 'csv-parse/sync';
import { parsePhoneNumberFromString } from 'libphonenumber-js';

export const PHONE_COLUMN = 'phone_number';
/** Contacts per campaign (a 5 MB upload holds far fewer; a presigned upload is capped here). */
export const MAX_CONTACT_ROWS = 100_000;
/** The spec's contextVariables limits. */
export const MAX_VARIABLES = 200;
export const MAX_VALUE_CHARS = 2000;

export class CsvError extends Error {}

export interface Contact {
  /** 1 = the first data row (line 2 of the file when the header is line 1). */
  rowNumber: number;
  phoneNumber: string;
  variables: Record<string, string>;
}

/** E.164 for a number as written in a CSV (with +, or with a leading 00, or national digits of `defaultCountry`). */
export function normalisePhone(raw: string, defaultCountry?: string): string | null {
  let s = raw.trim();
  if (!s) return null;
  if (s.startsWith('00')) s = `+${s.slice(2)}`;
  const parsed = parsePhoneNumberFromString(s, defaultCountry as never);
  if (!parsed || !parsed.isPossible()) return null;
  return parsed.number;
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/**
 * Parses and validates the whole file. Throws CsvError with a message naming the row/column; never returns a
 * partial result.
 */
export function parseContactsCsv(data: Buffer | string, opts: { defaultCountry?: string; maxRows?: number } = {}): Contact[] {
  const text = (typeof data === 'string' ? data : data.toString('utf8')).replace(/^\uFEFF/, '');
  if (!text.trim()) throw new CsvError('CSV file is empty: expected a header row with a phone_number column');
  let records: string[][];
  try {
    records = parse(text, { relax_column_count: false, skip_empty_lines: true, trim: true, bom: true });
  } catch (err) {
    const e = err as { message?: string; lines?: number };
    throw new CsvError(`CSV is not well formed${e.lines ? ` (line ${e.lines})` : ''}: ${(e.message ?? String(err)).replace(/^Invalid Record Length: /, '')}`);
  }
  const header = records[0]?.map((h) => h.trim()) ?? [];
  const phoneIdx = header.findIndex((h) => h.toLowerCase() === PHONE_COLUMN);
  if (phoneIdx < 0) throw new CsvError(`CSV must have a '${PHONE_COLUMN}' column (found: ${header.map((h) => `'${h}'`).join(', ') || 'no columns'})`);
  const seen = new Set<string>();
  header.forEach((h, i) => {
    if (!h) throw new CsvError(`CSV header: column ${i + 1} has no name`);
    if (seen.has(h.toLowerCase())) throw new CsvError(`CSV header: column '${h}' appears more than once`);
    seen.add(h.toLowerCase());
    if (i !== phoneIdx && !VARIABLE_NAME.test(h)) {
      throw new CsvError(`CSV header: column '${h}' is not a valid variable name (letters, digits, _, . and -, not starting with a digit)`);
    }
  });
  if (header.length - 1 > MAX_VARIABLES) throw new CsvError(`CSV has ${header.length - 1} context variable columns; at most ${MAX_VARIABLES} are allowed`);
  const rows = records.slice(1);
  if (rows.length === 0) throw new CsvError('CSV has no contact rows');
  const maxRows = opts.maxRows ?? MAX_CONTACT_ROWS;
  if (rows.length > maxRows) throw new CsvError(`CSV has ${rows.length} contact rows; at most ${maxRows} are allowed`);

  const contacts: Contact[] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    const rowNumber = r + 1;
    const raw = row[phoneIdx] ?? '';
    if (!raw) throw new CsvError(`Row ${rowNumber}, column '${PHONE_COLUMN}': phone number is empty`);
    const phone = normalisePhone(raw, opts.defaultCountry);
    if (!phone) throw new CsvError(`Row ${rowNumber}, column '${PHONE_COLUMN}': '${raw.slice(0, 40)}' is not a valid phone number (use E.164, e.g. +14155550123)`);
    const variables: Record<string, string> = {};
    for (let c = 0; c < header.length; c++) {
      if (c === phoneIdx) continue;
      const v = row[c] ?? '';
      if (v.length > MAX_VALUE_CHARS) throw new CsvError(`Row ${rowNumber}, column '${header[c]}': value is longer than ${MAX_VALUE_CHARS} characters`);
      variables[header[c]!] = v;
    }
    contacts[r] = { rowNumber, phoneNumber: phone, variables };
  }
  return contacts;
}
