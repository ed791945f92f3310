// A periodic background sweep (one process, unref'd timer): never two runs at once, a failed run is logged and the
// next tick tries again, and stop() clears the timer and waits for a run in progress.
import type { Logger } from './logger.ts';

export function startSweeper(run: () => Promise<unknown>, everyMs: number, logger: Logger, failMessage: string): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = run()
      .catch((err: unknown) => logger.warn({ err }, failMessage))
      .finally(() => { running = null; });
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
