// Waiting for something no event announces (a row's status, a fake's counter, a socket's state): poll it. Tests
// never sleep for a fixed time instead. No imports: the fakes in test/fakes/ use it outside ava too.

export interface UntilOptions {
  /** what is awaited, for the error when it never comes (default: the source of `fn`) */
  what?: string;
  /** give up after this long (default 20 s) */
  timeoutMs?: number;
  /** how often `fn` runs (default 25 ms); slower where each run costs a request or a query under load */
  everyMs?: number;
}

type Falsy = null | undefined | false;

/**
 * Run `fn` now and every `everyMs` until it returns something truthy, and resolve with that. After `timeoutMs`
 * it throws an error naming `what` and the last value `fn` returned. An error thrown by `fn` ends the wait at once
 * (a query that may fail while a server restarts catches its own error).
 */
export async function until<T>(fn: () => T | Falsy | Promise<T | Falsy>, opts: UntilOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const everyMs = opts.everyMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) {
      const what = opts.what ?? `\`${String(fn).replace(/\s+/g, ' ').slice(0, 160)}\``;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last value: ${describe(v)})`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function describe(v: unknown): string {
  if (v === '') return "''";
  return String(v);
}
