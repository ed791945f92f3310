// The POST /call envelope (everything but the inline agent itself): shape, the agent-selection rule and the
// telephony body rules. Pure functions; the route runs them in this order:
//   1. body not an object                        → 400 {error, details} (schema_validation)
//   2. neither agentId nor agent                  → 400 "Must provide either 'agentId' or 'agent'."
//   3. envelope shape / both agentId and agent    → 400 {error, details} (schema_validation)
//   4. type=outbound without toNumber             → 400 "'toNumber' is required when type='outbound'"
//      type=inbound with toNumber                 → 400 "'toNumber' is not allowed when type='inbound'"
//      unknown callConfig.provider                → 400 "unknown_provider: <name>"
import { z } from 'zod';
import { zodToItems, type ValidationItem } from '../validation.ts';
import { BROWSER_WEBRTC, type CallSource, type Transport } from './model.ts';

/** Carrier ids accepted in callConfig.provider (providers.md); smartflo is the streaming-native carrier. */
export const CARRIERS = ['twilio', 'plivo', 'telnyx', 'vonage', 'exotel', 'smartflo'] as const;
export const STREAMING_CARRIER = 'smartflo';

export const AGENT_SELECTION_MESSAGE = "Must provide either 'agentId' or 'agent'.";
export const CALL_VALIDATION_ERROR = 'Agent configuration validation failed';

/** Call-time (and test-call) context variables: same limits as the agent's saved defaults. */
export const contextVariablesSchema = z
  .record(z.string().min(1, 'Variable names must not be empty').max(200), z.string().max(2000))
  .refine((v) => Object.keys(v).length <= 200, { message: 'At most 200 context variables are allowed', params: { type: 'too_long' } });

export const envelopeSchema = z.strictObject({
  type: z.enum(['outbound', 'inbound']).nullish(),
  transport: z.enum(['webrtc', 'websocket']).nullish(),
  // Per-carrier inline auth fields are checked by each carrier's inlineAuthSchema (core/telephony); only the
  // common part is checked here.
  callConfig: z.looseObject({
    provider: z.string().min(1),
    phoneNumber: z.string().min(1).optional(),
    auth: z.record(z.string(), z.unknown()).optional(),
  }).nullish(),
  toNumber: z.string().min(1).nullish(),
  agentId: z.guid().nullish(),
  agent: z.unknown().optional(),
  contextVariables: contextVariablesSchema.nullish(),
});
export type CallEnvelope = z.infer<typeof envelopeSchema>;

export type EnvelopeResult =
  | { ok: true; body: CallEnvelope }
  | { ok: false; kind: 'object'; items: ValidationItem[] }
  | { ok: false; kind: 'string'; detail: string };

const present = (v: unknown) => v !== undefined && v !== null;

/** Where a (possibly invalid) body was headed: used for the transport, source and tags of a rejected row. */
export function classifyRequest(raw: unknown): { transport: Transport; callSource: CallSource; tags: string[] } {
  const o = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  if (o.type === 'outbound') return { transport: 'outbound', callSource: 'api_outbound', tags: ['api', 'outbound'] };
  if (o.type === 'inbound') return { transport: 'inbound', callSource: 'api_inbound', tags: ['api', 'inbound'] };
  if (o.transport === 'webrtc') return { ...BROWSER_WEBRTC, tags: ['api', 'webcall'] };
  return { transport: 'websocket', callSource: 'websocket', tags: ['api', 'webcall'] };
}

export function parseEnvelope(raw: unknown): EnvelopeResult {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ok: false, kind: 'object', items: [{ type: 'dict_type', path: [], msg: 'Input should be a valid dictionary or object', input: raw }] };
  }
  const o = raw as Record<string, unknown>;
  const hasId = present(o.agentId);
  const hasAgent = present(o.agent);
  if (!hasId && !hasAgent) return { ok: false, kind: 'string', detail: AGENT_SELECTION_MESSAGE };

  const items: ValidationItem[] = [];
  const parsed = envelopeSchema.safeParse(raw);
  if (!parsed.success) items.push(...zodToItems(parsed.error, raw));
  if (hasId && hasAgent) {
    items.push({ type: 'value_error', path: [], msg: "Provide exactly one of 'agentId' or 'agent', not both", input: null });
  }
  const telephony = o.type === 'outbound' || o.type === 'inbound';
  if (!telephony) {
    if (present(o.toNumber)) items.push({ type: 'value_error', path: ['toNumber'], msg: "'toNumber' is only allowed with type='outbound'", input: o.toNumber });
    if (present(o.callConfig)) items.push({ type: 'value_error', path: ['callConfig'], msg: "'callConfig' is only allowed with type='outbound' or type='inbound'", input: '[redacted]' });
  }
  if (items.length || !parsed.success) return { ok: false, kind: 'object', items };
  const body = parsed.data;

  if (body.type === 'outbound' && !present(body.toNumber)) return { ok: false, kind: 'string', detail: "'toNumber' is required when type='outbound'" };
  if (body.type === 'inbound' && present(body.toNumber)) return { ok: false, kind: 'string', detail: "'toNumber' is not allowed when type='inbound'" };
  if (body.type) {
    if (!body.callConfig) {
      return { ok: false, kind: 'object', items: [{ type: 'missing', path: ['callConfig'], msg: 'Field required', input: undefined }] };
    }
    const provider = body.callConfig.provider;
    if (!(CARRIERS as readonly string[]).includes(provider)) return { ok: false, kind: 'string', detail: `unknown_provider: ${provider}` };
    if (provider === STREAMING_CARRIER && body.callConfig.auth !== undefined) {
      // Its credentials are resolved server-side from the saved telephony configuration.
      return {
        ok: false,
        kind: 'object',
        items: [{ type: 'extra_forbidden', path: ['callConfig', provider, 'auth'], msg: 'Extra inputs are not permitted', input: '[redacted]' }],
      };
    }
  }
  return { ok: true, body };
}

/** `{base_url}` (http[s]://host/api/v1) → the WebSocket audio URL of a call. */
export function audioUrl(baseUrl: string, callId: string): string {
  return `${baseUrl.replace(/^http/, 'ws')}/ws/audio/${callId}`;
}

/** `{base_url}/webrtc/offer/{callId}`. */
export function offerUrl(baseUrl: string, callId: string): string {
  return `${baseUrl}/webrtc/offer/${callId}`;
}
