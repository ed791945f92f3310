// A vendor LLM that refuses a request for a moment (429, 5xx, connection refused or reset: a retryable engine error)
// should not cost the caller their turn. The request is sent again, at most twice (after 300 ms, then 1 s), as long
// as nothing of the reply has been streamed yet: once a word has gone to the caller a retry would repeat it, so an
// error after the first chunk is the caller's error event. A fatal error (key, model) is never retried, and
// an interruption (the request's signal) ends the wait at once. Worst case the caller waits ≈ 1.3 s plus three
// requests' time longer before the error event; the common case (one refused request) is answered 300 ms later.
import type { EngineError, LlmChunk, LlmPrefillContext, LlmRequest, LlmSchemaRequest, LlmService } from '../types.ts';

export const LLM_RETRY_DELAYS_MS: readonly number[] = [300, 1000];

function retryable(err: unknown): boolean {
  const e = (err as { engineError?: EngineError } | null)?.engineError;
  return !!e && e.retryable && !e.fatal;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export function withLlmRetries(llm: LlmService, delaysMs: readonly number[] = LLM_RETRY_DELAYS_MS): LlmService {
  return {
    provider: llm.provider,
    model: llm.model,
    ...(llm.prewarm ? { prewarm: () => llm.prewarm!() } : {}),
    ...(llm.prefill ? { prefill: (ctx: LlmPrefillContext) => llm.prefill!(ctx) } : {}),
    // one-shot answers are retried by their callers (activity retries), not here
    ...(llm.completeWithSchema ? { completeWithSchema: (r: LlmSchemaRequest) => llm.completeWithSchema!(r) } : {}),
    ...(llm.close ? { close: () => llm.close!() } : {}),
    async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
      for (let attempt = 0; ; attempt++) {
        let streamed = false;
        try {
          for await (const chunk of llm.stream(req)) {
            streamed = true;
            yield chunk;
          }
          return;
        } catch (err) {
          if (streamed || attempt >= delaysMs.length || req.signal.aborted || !retryable(err)) throw err;
          await pause(delaysMs[attempt]!, req.signal);
          if (req.signal.aborted) throw err;
        }
      }
    },
  };
}
