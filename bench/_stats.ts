// Percentiles for every benchmark: nearest-rank (the smallest sample with at least p % of samples at or below it).
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** A figure with one (f1) or two (f2) decimals; 'n/a' where there was nothing to measure (NaN, ∞). */
export const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
export const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
