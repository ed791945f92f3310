// Shared setup of the telephony tests: a server whose carrier base URLs point at local fakes, saved agents and
// telephony configurations created through the API.
import { z } from 'zod';
import { validateAgentConfig } from '../../core/agent-config/index.ts';
import { sql } from '../../core/db/pool.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import type { TestServer } from '../helpers/server.ts';
import type { FakeAccount, FakeTwilio } from '../fakes/twilio.ts';

export const inlineAgent = (extra: Record<string, unknown> = {}) => ({
  name: 'Phone Helper',
  llm: { provider: 'openai', model: 'gpt-4.1-mini' },
  stt: { provider: 'deepgram' },
  tts: { provider: 'elevenlabs' },
  ...extra,
});

/** A saved agent, stored the way agent creation stores it (the fully resolved config). */
export async function saveAgent(s: TestServer, orgId: string, input: Record<string, unknown> = inlineAgent()) {
  const v = await validateAgentConfig(input, { db: s.db, orgId, policy: policyFromConfig(s.config) });
  if (!v.ok) throw new Error(JSON.stringify(v));
  return s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config) VALUES (${orgId}, ${v.config.name}, ${sql.jsonb(v.config as never)})
    RETURNING id, uuid::text AS uuid`);
}

/** A Twilio configuration of the key's organization, created through the API. */
export async function twilioConfig(s: TestServer, key: string, acc: FakeAccount, name = 'Main Twilio', extra: Record<string, unknown> = {}) {
  const r = await s.request('POST', '/organizations/telephony-configs', {
    key, body: { name, config: { provider: 'twilio', account_sid: acc.sid, auth_token: acc.token, ...extra } },
  });
  if (r.status !== 201) throw new Error(`config create answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as { id: number };
}

export async function addNumber(s: TestServer, key: string, configId: number, body: Record<string, unknown>) {
  return s.request('POST', `/organizations/telephony-configs/${configId}/phone-numbers`, { key, body });
}

export function fakeEnv(twilio: FakeTwilio, smartfloOrigin?: string): Record<string, string> {
  return {
    TWILIO_API_BASE_URL: twilio.origin,
    ...(smartfloOrigin ? { SMARTFLO_API_BASE_URL: smartfloOrigin } : {}),
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    // The agents of these tests name vendor engines (never reached: no pipeline runs here); a key must be set for
    // POST /call to admit them (core/providers.ts).
    ...VENDOR_TEST_KEYS,
  };
}

export const VENDOR_TEST_KEYS: Record<string, string> = {
  OPENAI_API_KEY: 'sk-test-unused',
  SONIOX_API_KEY: 'soniox-test-unused',
  DEEPGRAM_API_KEY: 'dg-test-unused',
  ELEVENLABS_API_KEY: 'el-test-unused',
};

export const callRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  status: z.string(),
  transport: z.string(),
  call_source: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  telephony_provider: z.string().nullable(),
  platform_number: z.string().nullable(),
  customer_number: z.string().nullable(),
  carrier_call_id: z.string().nullable(),
  answered_by: z.string().nullable(),
  carrier_status: z.string().nullable(),
  tags: z.array(z.string()),
  logs: z.any(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
});

export async function callById(s: TestServer, id: string) {
  return s.db.maybeOne(sql.type(callRow)`
    SELECT id::text, organization_id::text, status, transport, call_source, connection_status, ended_reason, telephony_provider,
           platform_number, customer_number, carrier_call_id, answered_by, carrier_status, tags, logs, started_at, ended_at
    FROM calls WHERE id = ${id}`);
}

export async function callsOf(s: TestServer, orgId: string) {
  return s.db.any(sql.type(callRow)`
    SELECT id::text, organization_id::text, status, transport, call_source, connection_status, ended_reason, telephony_provider,
           platform_number, customer_number, carrier_call_id, answered_by, carrier_status, tags, logs, started_at, ended_at
    FROM calls WHERE organization_id = ${orgId} ORDER BY created_at`);
}
