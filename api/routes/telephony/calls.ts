// POST /call with type=outbound (dial through core/telephony/outbound.ts) or type=inbound (verify credentials and
// number ownership with the carrier, provision its webhook, upsert the binding). Called by calls.ts after the
// envelope and the agent were validated; every refusal leaves a rejected row through `reject`.
import type { ParameterizedContext } from 'koa';
import type { AgentConfig } from '../../../core/agent-config/index.ts';
import type { RejectReason } from '../../../core/calls/model.ts';
import type { CallEnvelope } from '../../../core/calls/request.ts';
import type { CallAgentRef } from '../../../core/calls/rows.ts';
import { gateError, type GateRejection } from '../../../core/calls/gates.ts';
import { HttpError, type ErrorDetail } from '../../../core/http-error.ts';
import { bakeBindingSnapshot, upsertBinding } from '../../../core/telephony/bindings.ts';
import { agentCarrierProblems } from '../../../core/telephony/fit.ts';
import { GateRefused, OutboundError, OutboundInvalid, ProviderRejected } from '../../../core/telephony/errors.ts';
import { normalizeAddress, sameNumber } from '../../../core/telephony/numbers.ts';
import { placeOutboundCall } from '../../../core/telephony/outbound.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { activeNumbersOfProvider, configUnreadable, getConfigById, readCredentials, type NumberRow } from '../../../core/telephony/store.ts';
import type { SecretUnreadable } from '../../../core/secrets.ts';
import { CarrierHttpError, type CarrierAdapter, type Credentials } from '../../../core/telephony/types.ts';
import { carrierVoiceStatusUrl, carrierVoiceUrl, smartfloStreamUrl } from '../../../core/telephony/urls.ts';
import { toCallDetails, zodToItems, type ValidationItem } from '../../../core/validation.ts';
import type { ApiDeps } from '../../deps.ts';
import { carrierName } from './carriers.ts';

type Reject = (reason: RejectReason, status: number, detail: ErrorDetail) => Promise<never>;

export interface TelephonyCallInput {
  ctx: ParameterizedContext;
  deps: ApiDeps;
  orgId: string;
  body: CallEnvelope;
  agentConfig: AgentConfig;
  agentRef: CallAgentRef;
  redacted: unknown;
  reject: Reject;
}

const validationError = (items: ValidationItem[]) => ({ error: 'Agent configuration validation failed', details: toCallDetails(items) });

/** The organization's active numbers of one carrier matching `phoneNumber` in any spelling. */
async function ownedNumber(deps: ApiDeps, orgId: string, provider: string, phoneNumber: string): Promise<NumberRow[]> {
  return (await activeNumbersOfProvider(deps.db, orgId, provider)).filter((n) => sameNumber(phoneNumber, n.address_normalized) || n.address === phoneNumber);
}

export async function telephonyCall(i: TelephonyCallInput): Promise<void> {
  const { body, reject } = i;
  const cc = body.callConfig!;
  const adapter = carrierFor(cc.provider);
  if (!adapter) {
    const what = body.type === 'outbound' ? 'Outbound calls with provider' : 'Inbound registration with provider';
    return reject('provider_not_supported', 501, `${what} '${cc.provider}' ${body.type === 'outbound' ? 'are' : 'is'} not implemented yet`);
  }
  if (!cc.phoneNumber) {
    return reject('schema_validation', 400, validationError([{ type: 'missing', path: ['callConfig', 'phoneNumber'], msg: 'Field required', input: undefined }]));
  }
  // what this carrier cannot do for the agent (a transfer it cannot make, a recording it cannot ask for): nothing dialled or registered
  const direction = body.type === 'outbound' ? 'outbound' : 'inbound';
  const problems = await agentCarrierProblems(i.deps.db, i.orgId, adapter, direction, i.agentConfig);
  if (problems.length) {
    const prefix = body.agent !== undefined ? ['agent'] : [];
    return reject('provider_not_supported', 400, validationError(problems.map((p) => ({ type: 'value_error', path: [...prefix, ...p.path], msg: p.msg, input: p.input }))));
  }
  return body.type === 'outbound' ? outbound(i, adapter, cc.phoneNumber) : inbound(i, adapter, cc.phoneNumber);
}

/** Inline credentials of callConfig.auth for carriers that take them (400 schema error on shape). */
async function inlineCredentials(i: TelephonyCallInput, adapter: CarrierAdapter): Promise<Credentials | null> {
  const auth = i.body.callConfig!.auth;
  if (auth === undefined || !adapter.inlineAuthSchema) return null;
  const parsed = adapter.inlineAuthSchema.safeParse(auth);
  if (!parsed.success) {
    return i.reject('schema_validation', 400, validationError(zodToItems(parsed.error, auth).map((x) => ({ ...x, path: ['callConfig', 'auth', ...x.path], input: '[redacted]' }))));
  }
  return parsed.data;
}

async function outbound(i: TelephonyCallInput, adapter: CarrierAdapter, phoneNumber: string): Promise<void> {
  const { deps, orgId, body, reject } = i;
  const to = normalizeAddress(body.toNumber!);
  if (!to.ok || (to.type === 'sip' && adapter.id !== 'twilio')) {
    return reject('schema_validation', 400, validationError([{ type: 'value_error', path: ['toNumber'], msg: `Value error, ${to.ok ? `${adapter.id} cannot dial SIP addresses` : to.message}`, input: body.toNumber }]));
  }
  let telephonyConfigId: number | undefined;
  let inline: { provider: string; credentials: Credentials } | undefined;
  let from: string;
  const creds = await inlineCredentials(i, adapter);
  if (creds) {
    const f = normalizeAddress(phoneNumber);
    if (!f.ok) return reject('schema_validation', 400, validationError([{ type: 'value_error', path: ['callConfig', 'phoneNumber'], msg: `Value error, ${f.message}`, input: phoneNumber }]));
    from = f.normalized;
    inline = { provider: adapter.id, credentials: creds };
  } else {
    // Server-side credentials: the organization's configuration owning phoneNumber (smartflo always; twilio
    // when no inline auth was sent).
    const candidates = await ownedNumber(deps, orgId, adapter.id, phoneNumber);
    let match: NumberRow | undefined;
    let unreadable: SecretUnreadable | null = null;
    for (const n of candidates) {
      const cfg = await getConfigById(deps.db, n.telephony_config_id);
      if (!cfg) continue;
      const creds = readCredentials(deps.config, cfg.credentials);
      if (!creds) unreadable ??= configUnreadable(cfg);
      else if (adapter.canDial(creds)) {
        match = n;
        break;
      }
    }
    if (!match && unreadable) return reject('missing_credentials', 409, unreadable.message);
    if (!match) {
      if (adapter.id === 'smartflo' || candidates.length > 0) {
        return reject('missing_credentials', 400, `phone_number_not_configured: ${phoneNumber} is not added and active under a ${adapter.id} configuration of this organization${adapter.id === 'smartflo' ? ' that has a click_to_call_api_key' : ''}`);
      }
      return reject('missing_credentials', 400, `missing_credentials: send callConfig.auth or add ${phoneNumber} to a ${adapter.id} telephony configuration of this organization`);
    }
    telephonyConfigId = match.telephony_config_id;
    from = match.address_normalized;
  }
  try {
    const placed = await placeOutboundCall(deps, {
      orgId,
      agent: { config: i.agentConfig, ref: i.agentRef },
      ...(telephonyConfigId !== undefined ? { telephonyConfigId } : {}),
      ...(inline ? { inline } : {}),
      fromNumber: from,
      toNumber: to.normalized,
      contextVariables: body.contextVariables ?? null,
      rejectedSnapshot: i.redacted,
    });
    i.ctx.body = {
      callId: placed.callId, status: placed.status, transport: 'outbound', provider: placed.provider,
      fromNumber: from, toNumber: to.normalized, carrierCallId: placed.carrierCallId,
    };
  } catch (err) {
    if (err instanceof GateRefused) throw gateError({ status: err.status as GateRejection['status'], reason: err.reason, detail: err.detail as GateRejection['detail'] });
    if (err instanceof ProviderRejected) throw new HttpError(err.status, err.detail);
    if (err instanceof OutboundInvalid && err.reason === 'snapshot_validation') throw new HttpError(err.status, err.detail);
    if (err instanceof OutboundError) return reject(err.reason as RejectReason, err.status, err.detail);
    throw err;
  }
}

async function inbound(i: TelephonyCallInput, adapter: CarrierAdapter, phoneNumber: string): Promise<void> {
  const { deps, orgId, body, reject } = i;
  const cx = { config: deps.config, logger: deps.logger };
  let creds: Credentials;
  let address: string;
  let telephonyConfigId: number | null = null;
  let inlineCreds: Credentials | null = null;
  if (adapter.inlineAuthSchema) {
    const given = await inlineCredentials(i, adapter);
    if (!given) return reject('schema_validation', 400, validationError([{ type: 'missing', path: ['callConfig', 'auth'], msg: 'Field required', input: undefined }]));
    const n = normalizeAddress(phoneNumber);
    if (!n.ok || n.type !== 'pstn') {
      return reject('schema_validation', 400, validationError([{ type: 'value_error', path: ['callConfig', 'phoneNumber'], msg: `Value error, ${n.ok ? 'inbound registration needs an E.164 number' : n.message}`, input: phoneNumber }]));
    }
    creds = given;
    inlineCreds = given;
    address = n.normalized;
  } else {
    const candidates = await ownedNumber(deps, orgId, adapter.id, phoneNumber);
    const match = candidates[0];
    if (!match) return reject('inbound_invalid', 400, `phone_number_not_configured: ${phoneNumber} is not added or not active under any of this organization's ${adapter.id} configurations`);
    const cfg = await getConfigById(deps.db, match.telephony_config_id);
    const opened = cfg ? readCredentials(deps.config, cfg.credentials) : {};
    if (cfg && !opened) return reject('missing_credentials', 409, configUnreadable(cfg).message);
    creds = opened ?? {};
    if (!cfg || typeof creds.auth_token !== 'string' || creds.auth_token.length === 0) {
      return reject('missing_credentials', 400, `${adapter.id}_config_missing_token: the configuration owning ${phoneNumber} has no auth token`);
    }
    telephonyConfigId = cfg.id;
    address = match.address_normalized;
  }

  // Live checks with the carrier: credentials, then ownership of the number.
  try {
    const probe = await adapter.probeCredentials(cx, creds);
    if (!probe.ok) return reject('credentials_invalid', 400, `invalid_credentials: ${probe.reason}`);
    const owned = await adapter.probeNumber(cx, creds, address);
    if (!owned.owned) return reject('inbound_invalid', 400, `Phone number ${address} is not owned by this ${carrierName(adapter.id)} account`);
  } catch (err) {
    if (err instanceof CarrierHttpError) return reject('inbound_invalid', 502, `${carrierName(adapter.id)} could not verify the registration: ${err.message}`);
    throw err;
  }

  const baked = await bakeBindingSnapshot(deps, orgId, i.agentConfig as unknown as Record<string, unknown>, body.contextVariables ?? null);
  if (!baked.ok) return reject(baked.status === 422 ? 'model_validation' : 'snapshot_validation', baked.status, baked.message);

  const sync = await adapter.syncInbound(cx, creds, address, { voiceUrl: carrierVoiceUrl(deps.config, adapter.id), statusCallbackUrl: carrierVoiceStatusUrl(deps.config, adapter.id) });
  // the carrier can never route the number to us with these credentials (Plivo without application): nothing saved
  if (!sync.ok && sync.blocking) return reject('inbound_invalid', 400, sync.message ?? 'the carrier cannot route this number');
  const binding = await upsertBinding(deps.db, deps.config, {
    orgId,
    provider: adapter.id,
    address: phoneNumber,
    addressNormalized: address,
    agent: { id: i.agentRef.id, uuid: i.agentRef.uuid, name: i.agentRef.name ?? baked.snapshot.name },
    snapshot: baked.snapshot,
    contextVariables: body.contextVariables ?? {},
    credentials: inlineCreds,
    accountRef: adapter.accountRef?.(creds) ?? null,
    telephonyConfigId,
  });
  i.ctx.body = {
    bindingId: binding.id,
    status: 'registered',
    provider: adapter.id,
    phoneNumber,
    address_normalized: address,
    agentId: binding.agent_uuid,
    agentName: binding.agent_name,
    provider_sync: sync,
    ...(adapter.id === 'smartflo' && telephonyConfigId !== null ? { voice_bot_wss_url: smartfloStreamUrl(deps.config, telephonyConfigId) } : {}),
  };
}
