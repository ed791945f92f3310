// Carrier REST requests: through the outbound guard (core/net/ssrf.ts; local fakes need OUTBOUND_ALLOW_HOSTS),
// with a timeout; network failures become CarrierHttpError(status 0). Credentials never reach a log or an error.
import type { Config } from '../config.ts';
import { policyFromConfig, safeFetch, type OutboundPolicy } from '../net/ssrf.ts';
import { CarrierHttpError } from './types.ts';

const policies = new WeakMap<object, OutboundPolicy>();
const TIMEOUT_MS = 15_000;

function policyOf(config: Config): OutboundPolicy {
  let p = policies.get(config);
  if (!p) {
    p = policyFromConfig(config);
    policies.set(config, p);
  }
  return p;
}

export interface CarrierResponse {
  status: number;
  body: unknown;
  text: string;
}

export async function carrierRequest(
  config: Config,
  provider: string,
  url: string,
  init: { method: string; headers?: Record<string, string>; form?: URLSearchParams; json?: unknown },
): Promise<CarrierResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
  let body: string | undefined;
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = init.form.toString();
  } else if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  let res: Response;
  try {
    res = await safeFetch(url, { method: init.method, headers, body, policy: policyOf(config), timeoutMs: TIMEOUT_MS, redirect: 'error' });
  } catch (err) {
    const e = err as Error & { cause?: Error };
    const why = e.cause?.message ?? e.message;
    throw new CarrierHttpError(provider, 0, `${provider} is unreachable: ${why}`);
  }
  let text = '';
  try {
    text = await res.text();
  } catch (err) {
    throw new CarrierHttpError(provider, 0, `${provider} answer could not be read: ${(err as Error).message}`);
  }
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: res.status, body: parsed, text };
}
