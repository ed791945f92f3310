// Shared pieces of the post-call tests: a fake OpenAI Chat Completions server, WAV bytes, and call/agent rows as
// media leaves them at the end of a call.
import http from 'node:http';
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';
import { wavHeader } from '../../core/audio/wav.ts';
import { body, listen } from '../helpers/http.ts';

/** A fake OpenAI Chat Completions endpoint (non-streaming) returning `reply`; `hold` keeps a request open. */
export async function startFakeOpenAI(reply: string) {
  const requests: Array<{ headers: http.IncomingHttpHeaders; body: any }> = [];
  let hold: ((req: http.IncomingMessage) => boolean) | null = null;
  const held: http.ServerResponse[] = [];
  const srv = await listen(async (req, res) => {
    const raw = await body(req);
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    requests.push({ headers: req.headers, body: JSON.parse(raw.toString('utf8')) });
    if (hold?.(req)) {
      held.push(res);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      id: 'chatcmpl-test', object: 'chat.completion', created: 1, model: requests.at(-1)!.body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 100, completion_tokens: 40, total_tokens: 140 },
    }));
  });
  return {
    ...srv,
    baseUrl: `${srv.url}/v1`,
    requests,
    setHold(f: ((req: http.IncomingMessage) => boolean) | null) { hold = f; },
    async close() {
      for (const r of held) r.destroy();
      await srv.close();
    },
  };
}

/** A 440 Hz tone as 16-bit mono PCM WAV. */
export function makeWav(seconds: number, sampleRate = 24000): Buffer {
  const samples = Math.round(seconds * sampleRate);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 8000), i * 2);
  return Buffer.concat([wavHeader({ sampleRate, dataBytes: pcm.length }), pcm]);
}

export const TRANSCRIPT = [
  { role: 'assistant', content: 'Hello, this is Ava from Acme Dental. How can I help you today?', timestamp: '2026-01-01T10:00:01.000Z' },
  { role: 'user', content: 'Hi, I would like to move my cleaning appointment to next Tuesday.', timestamp: '2026-01-01T10:00:05.000Z' },
  { role: 'tool', name: 'reschedule', status: 'success', durationMs: 420, t_ms: 7200, timestamp: '2026-01-01T10:00:07.200Z' },
  { role: 'assistant', content: 'Done. You are booked for Tuesday at 3 PM.', timestamp: '2026-01-01T10:00:08.000Z' },
  { role: 'user', content: 'Great, thank you. Bye.', timestamp: '2026-01-01T10:00:10.000Z' },
];

export const USAGE = {
  llm: { provider: 'openai', model: 'gpt-4o-mini', prompt_tokens: 12000, completion_tokens: 800 },
  tts: { provider: 'elevenlabs', model: 'eleven_flash_v2_5', characters: 1500 },
  stt: { provider: 'deepgram', model: 'flux-general-en', seconds: 42.5 },
};

export async function insertAgent(db: Db, orgId: string, opts: { webhookUrl: string | null; secret?: string | null; headers?: Record<string, string>; summarize?: boolean; provider?: string; model?: string }) {
  const config = agentConfig(opts);
  return db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config, webhook_secret)
    VALUES (${orgId}, 'Ava', ${JSON.stringify(config)}::jsonb, ${opts.secret ?? null}) RETURNING id, uuid`);
}

export function agentConfig(opts: { webhookUrl: string | null; headers?: Record<string, string>; summarize?: boolean; provider?: string; model?: string }) {
  return {
    name: 'Ava',
    llm: { provider: opts.provider ?? 'openai', model: opts.model ?? 'gpt-4o-mini', temperature: 1, maxTokens: 251, prewarm: true },
    stt: { provider: 'deepgram', model: null, interruptionMinWords: 0 },
    tts: { provider: 'elevenlabs', model: 'eleven_flash_v2_5', voice: null },
    webhook: opts.webhookUrl ? { url: opts.webhookUrl, headers: opts.headers ?? {} } : null,
    enableSummarization: opts.summarize ?? false,
  };
}

/** A finished call row as media writes it at the end of a call. */
export async function insertEndedCall(
  db: Db,
  o: { orgId: string; agent: { id: number; uuid: string } | null; config: object; transcript?: unknown; usage?: unknown; durationSeconds?: number; endedReason?: string },
): Promise<string> {
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO calls (organization_id, agent_id, agent_uuid, agent_name, transport, status, connection_status, ended_reason,
                       call_source, config_snapshot, transcript, usage, duration_seconds, started_at, ended_at)
    VALUES (${o.orgId}, ${o.agent?.id ?? null}, ${o.agent?.uuid ?? null}, 'Ava', 'websocket', 'completed', 'completed',
            ${o.endedReason ?? 'user_hangup'}, 'websocket', ${JSON.stringify(o.config)}::jsonb,
            ${o.transcript === undefined ? JSON.stringify(TRANSCRIPT) : JSON.stringify(o.transcript)}::jsonb,
            ${JSON.stringify(o.usage ?? USAGE)}::jsonb, ${o.durationSeconds ?? 42.5}, now() - interval '43 seconds', now())
    RETURNING id`);
}
