// Structured JSON logs. Secrets and keys are redacted wherever they appear in the usual places.
import { pino, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  'apiKey',
  'api_key',
  '*.apiKey',
  '*.api_key',
  'webhookSecret',
  '*.webhookSecret',
  'auth',
  '*.auth',
  'password',
  '*.password',
];

export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino({
    name: opts.name,
    level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

/** Remove api_key=... from a URL before logging it. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:api_key|token|signature|sig)=)[^&]*/gi, '$1[redacted]');
}
