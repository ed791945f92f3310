// ISO 8601 dates and date-times of query parameters (GET /calls from_date/to_date, usage reports from/to), checked
// field by field: JavaScript's Date rolls 2025-02-30 over to March 2 and accepts year 0, and PostgreSQL refuses
// both (a 500 if they reached SQL), so every part is range-checked here and a bad one is the caller's 422.
//
// Accepted: `YYYY-MM-DD`, or `YYYY-MM-DD[T ]HH:MM[:SS[.fraction]]` with an optional `Z` or `±HH[:MM]` offset (UTC
// when none). Years 0001..9999, real calendar days (leap years), hours 00..23, minutes and seconds 00..59, offsets
// up to ±14:00 (the widest in use).

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|([+-])(\d{2})(?::?(\d{2}))?)?$/i;

export interface IsoInstant {
  /** The instant as a string PostgreSQL reads exactly (offset kept, `Z` added when the input had none). */
  text: string;
  date: Date;
}

const daysIn = (y: number, m: number) => [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;

function utc(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): Date {
  const out = new Date(Date.UTC(2000, mo - 1, d, h, mi, s, ms));
  out.setUTCFullYear(y); // Date.UTC maps years 0..99 to 1900..1999
  return out;
}

/** Why `s` is not a valid date: null when it is. */
function dateProblem(y: number, mo: number, d: number): string | null {
  if (y < 1) return 'year 0000 does not exist (years run from 0001)';
  if (mo < 1 || mo > 12) return `month ${String(mo).padStart(2, '0')} does not exist`;
  if (d < 1 || d > daysIn(y, mo)) return `day ${String(d).padStart(2, '0')} does not exist in ${y}-${String(mo).padStart(2, '0')}`;
  return null;
}

export type IsoResult = { ok: true; value: IsoInstant } | { ok: false; message: string };

/**
 * A date or date-time (see the file header). A date alone is 00:00 UTC of that day, or with `endOfDay` its last
 * microsecond (an inclusive upper bound covering the whole day).
 */
export function parseIsoInstant(raw: string, opts: { endOfDay?: boolean } = {}): IsoResult {
  const s = raw.trim();
  const bad = (why?: string): IsoResult => ({ ok: false, message: `Input should be a valid ISO 8601 date or datetime${why ? `: ${why}` : ''}` });
  const dm = DATE.exec(s);
  if (dm) {
    const [y, mo, d] = [Number(dm[1]), Number(dm[2]), Number(dm[3])];
    const p = dateProblem(y, mo, d);
    if (p) return bad(p);
    return opts.endOfDay
      ? { ok: true, value: { text: `${s}T23:59:59.999999Z`, date: utc(y, mo, d, 23, 59, 59, 999) } }
      : { ok: true, value: { text: `${s}T00:00:00Z`, date: utc(y, mo, d) } };
  }
  const m = DATE_TIME.exec(s);
  if (!m) return bad();
  const [y, mo, d, h, mi] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
  const sec = m[6] === undefined ? 0 : Number(m[6]);
  const p = dateProblem(y, mo, d);
  if (p) return bad(p);
  if (h > 23) return bad(`hour ${m[4]} does not exist (00 to 23)`);
  if (mi > 59) return bad(`minute ${m[5]} does not exist (00 to 59)`);
  if (sec > 59) return bad(`second ${m[6]} does not exist (00 to 59)`);
  let offsetMin = 0;
  if (m[8] && m[8].toUpperCase() !== 'Z') {
    const oh = Number(m[10]);
    const om = m[11] === undefined ? 0 : Number(m[11]);
    if (om > 59 || oh * 60 + om > 14 * 60) return bad(`offset ${m[8]} is out of range (at most ±14:00)`);
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0;
  const date = new Date(utc(y, mo, d, h, mi, sec, ms).getTime() - offsetMin * 60_000);
  const clock = `${m[4]}:${m[5]}:${m[6] ?? '00'}${m[7] ?? ''}`;
  const zone = offsetMin === 0 ? 'Z' : `${m[9]}${m[10]}:${m[11] ?? '00'}`;
  const text = `${m[1]}-${m[2]}-${m[3]}T${clock}${zone}`;
  return { ok: true, value: { text, date } };
}
