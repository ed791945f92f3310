// OpenAPI path items of the telephony endpoints (configurations, phone numbers, inbound bindings; the carrier
// webhooks are in carriers.ts).
import { z } from 'zod';
import { exotel } from '../../core/telephony/exotel.ts';
import { plivo } from '../../core/telephony/plivo.ts';
import { smartflo } from '../../core/telephony/smartflo.ts';
import { telnyx } from '../../core/telephony/telnyx.ts';
import { twilio } from '../../core/telephony/twilio.ts';
import type { CarrierAdapter } from '../../core/telephony/types.ts';
import { vonage } from '../../core/telephony/vonage.ts';
import { registerOpenApiPaths } from './document.ts';
import { body, bool, err, int, nullable, ok, page, pageOf, str, ts } from './parts.ts';

const path = (name: string) => ({ name, in: 'path', required: true, schema: int });
const tags = ['Telephony'];

const twilioConfig = {
  type: 'object', title: 'twilio',
  properties: { provider: { const: 'twilio' }, account_sid: { type: 'string', pattern: '^AC[0-9a-fA-F]{32}$' }, auth_token: str, amd_enabled: { type: 'boolean', default: false } },
  required: ['provider', 'account_sid', 'auth_token'],
};
const smartfloConfig = {
  type: 'object', title: 'smartflo',
  properties: { provider: { const: 'smartflo' }, auth_token: str, click_to_call_api_key: str },
  required: ['provider', 'auth_token'],
};
/** A carrier's `config` body from the adapter's own credentials schema (input side) plus `provider` (amd_enabled is
 *  Twilio's only: another carrier's config with it answers 422). */
function carrierConfig(adapter: CarrierAdapter): Record<string, unknown> {
  const js = z.toJSONSchema(adapter.credentialsSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete js.$schema;
  const props = (js.properties ?? {}) as Record<string, unknown>;
  return {
    ...js, type: 'object', title: adapter.id,
    properties: { provider: { const: adapter.id }, ...props },
    required: ['provider', ...((js.required as string[] | undefined) ?? [])],
  };
}
const schemaCarriers = [plivo, telnyx, vonage, exotel];
const carrierConfigs = [twilioConfig, smartfloConfig, ...schemaCarriers.map(carrierConfig)];
const allCarriers = [twilio, smartflo, ...schemaCarriers];
const configRecord = {
  type: 'object',
  description: `Secrets are always masked (${allCarriers.map((a) => `${a.id}: ${a.secretFields.join(', ')}`).join('; ')}).`,
  properties: {
    id: int, name: str, provider: { enum: allCarriers.map((a) => a.id) }, is_default_outbound: bool,
    config: { type: 'object' }, voice_bot_wss_url: { ...str, description: 'smartflo only: static signed stream URL to paste into the Smartflo portal' },
    phone_numbers_count: int,
    credentials_state: { enum: ['ok', 'credentials_unreadable'], description: "credentials_unreadable: the current TELEPHONY_ENCRYPTION_KEY cannot open the stored credentials (left out of `config`); send them again with PUT" },
    created_at: ts, updated_at: ts,
  },
};
const numberRecord = {
  type: 'object',
  properties: {
    id: int, telephony_configuration_id: int, address: str, address_normalized: str, address_type: { enum: ['pstn', 'sip'] }, label: nullable(str),
    inbound_agent_id: nullable(int), inbound_agent_uuid: nullable(str), inbound_agent_name: nullable(str), is_active: bool, is_default_caller_id: bool,
    extra_metadata: { type: 'object' }, created_at: ts, updated_at: ts,
    provider_sync: { type: 'object', properties: { ok: bool, message: nullable(str) }, description: 'Present when an inbound agent was attached; ok=false is a warning (row saved, carrier not updated)' },
  },
};
const numberBody = (required: boolean) => ({
  type: 'object',
  properties: {
    address: { ...str, description: 'E.164 or SIP URI; bare digits need country_code' }, country_code: { ...str, minLength: 2, maxLength: 2 },
    label: { ...str, maxLength: 64 }, inbound_agent_uuid: { type: 'string', format: 'uuid' }, is_active: { ...bool, default: true },
    is_default_caller_id: { ...bool, default: false }, extra_metadata: { type: 'object' },
  },
  ...(required ? { required: ['address'] } : {}),
});
const bindingRecord = {
  type: 'object',
  properties: {
    id: int, provider: str, phone_number: str, address_normalized: str, agent_id: nullable(str), agent_name: nullable(str),
    agentSnapshot: { type: 'object' }, contextVariables: { type: 'object', additionalProperties: str }, telephony_configuration_id: nullable(int),
    credentials: nullable({ type: 'object', description: 'masked' }),
    credentials_state: { enum: ['ok', 'credentials_unreadable', 'none'], description: 'none: no inline credentials stored; credentials_unreadable: the current TELEPHONY_ENCRYPTION_KEY cannot open them (credentials null); re-register with POST /call type=inbound' },
    created_at: ts, updated_at: ts,
  },
};

registerOpenApiPaths({
  '/organizations/telephony-configs': {
    post: {
      tags, summary: 'Save carrier credentials (probed with the carrier, encrypted at rest)',
      requestBody: body({ type: 'object', properties: { name: { ...str, minLength: 1, maxLength: 64 }, is_default_outbound: { ...bool, default: false }, config: { oneOf: carrierConfigs } }, required: ['name', 'config'] }),
      responses: { 201: ok(configRecord, 'Created'), 400: err('invalid_credentials: <reason> / unknown_provider: <name>'), 409: err("A telephony configuration named '…' already exists in this organization."), 422: err('Validation failed (array)'), 501: err('Carrier not built yet'), 502: err('The carrier could not be reached') },
    },
    get: { tags, summary: 'List configurations', parameters: page, responses: { 200: ok(pageOf(configRecord)) } },
  },
  '/organizations/telephony-configs/{config_id}': {
    get: { tags, summary: 'One configuration', parameters: [path('config_id')], responses: { 200: ok(configRecord), 404: err("'Telephony configuration not found'") } },
    put: { tags, summary: 'Partial update (the provider cannot change; new credentials are probed)', parameters: [path('config_id')], requestBody: body({ type: 'object', properties: { name: str, is_default_outbound: bool, config: { type: 'object' } } }), responses: { 200: ok(configRecord), 400: err('Provider change or invalid_credentials'), 404: err("'Telephony configuration not found'"), 409: err('Name taken') } },
    delete: { tags, summary: 'Delete a configuration and its numbers', parameters: [path('config_id')], responses: { 204: { description: 'Deleted' }, 404: err("'Telephony configuration not found'"), 409: err("Telephony configuration '…' is in use by N live call(s) (…) and N campaign(s) not completed or failed (…); nothing deleted") } },
  },
  '/organizations/telephony-configs/{config_id}/set-default-outbound': {
    post: { tags, summary: 'Make this the default outbound configuration', parameters: [path('config_id')], responses: { 200: ok(configRecord), 404: err("'Telephony configuration not found'") } },
  },
  '/telephony-configs/{config_id}': {
    get: { tags, summary: 'One configuration, including voice_bot_wss_url', parameters: [path('config_id')], responses: { 200: ok(configRecord), 404: err("'Telephony configuration not found'") } },
  },
  '/organizations/telephony-configs/{config_id}/phone-numbers': {
    post: { tags, summary: 'Add a number (ownership checked with the carrier; inbound agent synced)', parameters: [path('config_id')], requestBody: body(numberBody(true)), responses: { 200: ok(numberRecord), 400: err('Bare digits without country_code / not owned by the carrier account'), 404: err("'Telephony configuration not found' / 'Agent not found'"), 409: err("'This phone number is already added in this organization.'") } },
    get: { tags, summary: 'List numbers', parameters: [path('config_id'), ...page], responses: { 200: ok(pageOf(numberRecord)) } },
  },
  '/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}': {
    get: { tags, summary: 'One number', parameters: [path('config_id'), path('phone_number_id')], responses: { 200: ok(numberRecord), 404: err("'Phone number not found'") } },
    put: { tags, summary: 'Update a number (inbound_agent_uuid null detaches)', parameters: [path('config_id'), path('phone_number_id')], requestBody: body(numberBody(false)), responses: { 200: ok(numberRecord), 404: err("'Phone number not found'"), 409: err('Duplicate') } },
    delete: { tags, summary: 'Remove a number', parameters: [path('config_id'), path('phone_number_id')], responses: { 204: { description: 'Deleted' }, 404: err("'Phone number not found'") } },
  },
  '/telephony/inbound/bindings': {
    get: { tags, summary: 'Inbound bindings (created by POST /call type=inbound)', parameters: page, responses: { 200: ok(pageOf(bindingRecord)) } },
  },
  '/telephony/inbound/bindings/{id}': {
    get: { tags, summary: 'One binding', parameters: [path('id')], responses: { 200: ok(bindingRecord), 404: err("'binding_not_found'") } },
    patch: {
      tags, summary: 'Swap the agent (no re-provisioning)', parameters: [path('id')],
      requestBody: body({ type: 'object', additionalProperties: false, properties: { agent: { $ref: '#/components/schemas/AgentConfig' }, agentId: { type: 'string', format: 'uuid' }, contextVariables: { type: 'object', additionalProperties: str } } }),
      responses: { 200: ok(bindingRecord), 400: err('provide_agent_or_agentId_not_both / must_provide_agent_or_agentId / invalid snapshot'), 404: err("'binding_not_found' / 'agent_not_found'"), 422: err('Model not in the catalog') },
    },
    delete: { tags, summary: 'Delete (204 whether or not it existed); routing falls back to the number agent', parameters: [path('id')], responses: { 204: { description: 'Deleted' } } },
  },
});
