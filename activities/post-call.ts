// Activities of the postCall workflow (workflows/post-call). Each one takes only {callId}, reads what it needs from
// the call row, writes its own result on the row and is idempotent: a retry, or a re-run after a worker crash,
// converges on the same row and never sends call.completed twice or debits twice.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { Config } from '../core/config.ts';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import { policyFromConfig } from '../core/net/ssrf.ts';
import { debitCall } from '../core/orgs.ts';
import { computeCost } from '../core/pricing.ts';
import { type Storage } from '../core/storage/index.ts';
import { analysisOf } from '../core/agent-config/analysis.ts';
import { parseWavHeader, InvalidWavError } from '../core/audio/wav.ts';
import {
  cleanSummary,
  extractiveSummary,
  SUMMARY_SYSTEM_PROMPT,
  summaryUserPrompt,
  type TranscriptEntry,
} from '../core/summary.ts';
import { deliverWebhook, prepareWebhook, recordWebhookResult } from '../core/webhook.ts';
import { spoolRecordingKey } from '../workflows/post-call/messages.ts';

export interface PostCallDeps {
  config: Config;
  db: Db;
  logger: Logger;
  storage: Storage;
}

const ENDED = ['completed', 'error'];

export const postCallRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  duration_seconds: z.number().nullable(),
  transcript: z.unknown(),
  transcript_url: z.string().nullable(),
  recording_url: z.string().nullable(),
  usage: z.unknown(),
  summary: z.string().nullable(),
  cost: z.number().nullable(),
  config_snapshot: z.unknown(),
  completed_event_claimed_at: z.string().nullable(),
  post_call_completed_at: z.string().nullable(),
  analysis: z.unknown(),
});
export type PostCallRow = z.infer<typeof postCallRow>;

export async function loadPostCallRow(db: Db, callId: string): Promise<PostCallRow | null> {
  return db.maybeOne(sql.type(postCallRow)`
    SELECT id, organization_id, agent_id, agent_uuid, status, connection_status, ended_reason, duration_seconds,
           transcript, transcript_url, recording_url, usage, summary, cost, config_snapshot,
           completed_event_claimed_at, post_call_completed_at, analysis
    FROM calls WHERE id = ${callId}`);
}

export function transcriptOf(row: Pick<PostCallRow, 'transcript'>): TranscriptEntry[] | null {
  return Array.isArray(row.transcript) ? (row.transcript as TranscriptEntry[]) : null;
}

/** The agent's webhook from the frozen snapshot: stored as {url, headers}; a bare string is tolerated. */
export function webhookOf(snapshot: unknown): { url: string; headers: Record<string, string> } | null {
  const w = (snapshot as { webhook?: unknown } | null)?.webhook;
  if (typeof w === 'string' && w) return { url: w, headers: {} };
  if (w && typeof w === 'object' && typeof (w as { url?: unknown }).url === 'string' && (w as { url: string }).url) {
    const h = (w as { headers?: unknown }).headers;
    const headers: Record<string, string> = {};
    if (h && typeof h === 'object') for (const [k, v] of Object.entries(h)) if (typeof v === 'string') headers[k] = v;
    return { url: (w as { url: string }).url, headers };
  }
  return null;
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/** The call.completed payload, every field of the spec, from the finished row. */
export function callCompletedPayload(row: PostCallRow) {
  return {
    event: 'call.completed' as const,
    callId: row.id,
    agentId: row.agent_uuid,
    endedReason: row.ended_reason,
    connectionStatus: row.connection_status,
    duration: round2(row.duration_seconds ?? 0),
    recordingUrl: row.recording_url,
    transcript: transcriptOf(row),
    transcriptUrl: row.transcript_url,
    summary: row.summary,
    usage: row.usage && typeof row.usage === 'object' ? row.usage : null,
    analysis: row.analysis && typeof row.analysis === 'object' ? row.analysis : null,
  };
}

/** Heartbeat when running inside an activity; a no-op when called directly (unit tests). */
function heartbeat(details?: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    /* not in an activity context */
  }
}

/** Heartbeats every 5 s while `run` works (large uploads), so the activity's heartbeat timeout only catches real hangs. */
export async function withHeartbeat<T>(run: () => Promise<T>): Promise<T> {
  heartbeat();
  const timer = setInterval(() => heartbeat(), 5000);
  try {
    return await run();
  } finally {
    clearInterval(timer);
  }
}

function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

async function readHead(stream: NodeJS.ReadableStream, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stream) {
    const buf = Buffer.isBuffer(c) ? c : Buffer.from(c as string);
    chunks.push(buf);
    size += buf.length;
    if (size >= bytes) break;
  }
  (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  return Buffer.concat(chunks).subarray(0, bytes);
}

interface ChatTarget {
  kind: 'openai' | 'anthropic' | 'google';
  base: string;
  apiKey: string | undefined;
  model: string;
}

function chatTarget(config: Config, llm: { provider?: unknown; model?: unknown }): ChatTarget | 'extractive' | null {
  const model = typeof llm.model === 'string' ? llm.model : '';
  switch (llm.provider) {
    case 'openai':
      return { kind: 'openai', base: config.OPENAI_BASE_URL, apiKey: config.OPENAI_API_KEY, model };
    case 'groq':
      return { kind: 'openai', base: config.GROQ_BASE_URL, apiKey: config.GROQ_API_KEY, model };
    case 'anthropic':
      return { kind: 'anthropic', base: config.ANTHROPIC_BASE_URL, apiKey: config.ANTHROPIC_API_KEY, model };
    case 'google':
      return { kind: 'google', base: config.GOOGLE_BASE_URL, apiKey: config.GOOGLE_API_KEY, model };
    case 'local':
      return config.LOCAL_LLM_BASE_URL
        ? { kind: 'openai', base: config.LOCAL_LLM_BASE_URL, apiKey: undefined, model: config.LOCAL_LLM_MODEL ?? model }
        : 'extractive';
    default:
      return null;
  }
}

/** One non-streaming completion. Throws on HTTP errors (4xx other than 408/429 are non-retryable). */
async function complete(target: ChatTarget, system: string, user: string, signal?: AbortSignal): Promise<string> {
  const base = target.base.replace(/\/+$/, '');
  let url: string;
  let headers: Record<string, string> = { 'content-type': 'application/json' };
  let body: unknown;
  if (target.kind === 'openai') {
    url = `${base}/chat/completions`;
    if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
    body = { model: target.model, stream: false, temperature: 0.3, max_tokens: 300, messages: [{ role: 'system', content: system }, { role: 'user', content: user }] };
  } else if (target.kind === 'anthropic') {
    url = `${base}/v1/messages`;
    headers = { ...headers, 'x-api-key': target.apiKey ?? '', 'anthropic-version': '2023-06-01' };
    body = { model: target.model, max_tokens: 300, temperature: 0.3, system, messages: [{ role: 'user', content: user }] };
  } else {
    url = `${base}/v1beta/models/${encodeURIComponent(target.model)}:generateContent`;
    headers['x-goog-api-key'] = target.apiKey ?? '';
    body = { systemInstruction: { parts: [{ text: system }] }, contents: [{ role: 'user', parts: [{ text: user }] }], generationConfig: { temperature: 0.3, maxOutputTokens: 300 } };
  }
  const timeout = AbortSignal.timeout(60_000);
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
  const text = await res.text();
  if (!res.ok) {
    const msg = `summary LLM answered HTTP ${res.status}: ${text.slice(0, 300)}`;
    if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw ApplicationFailure.nonRetryable(msg, 'SummaryRejected');
    throw new Error(msg);
  }
  const json = JSON.parse(text) as Record<string, any>;
  const out =
    target.kind === 'openai'
      ? json.choices?.[0]?.message?.content
      : target.kind === 'anthropic'
        ? (json.content as Array<{ type: string; text?: string }> | undefined)?.filter((b) => b.type === 'text').map((b) => b.text).join('')
        : (json.candidates?.[0]?.content?.parts as Array<{ text?: string }> | undefined)?.map((p) => p.text ?? '').join('');
  if (typeof out !== 'string' || !out.trim()) throw new Error('summary LLM returned no text');
  return out;
}

export function createPostCallActivities(deps: PostCallDeps) {
  const { config, db, logger, storage } = deps;
  const policy = policyFromConfig(config);

  async function mustLoad(callId: string): Promise<PostCallRow> {
    const row = await loadPostCallRow(db, callId);
    if (!row) throw ApplicationFailure.nonRetryable(`call ${callId} not found`, 'CallNotFound');
    return row;
  }

  return {
    /** The call row exists and has ended (media writes it before signalling). Retried while it is still live. */
    async checkCallEnded({ callId }: { callId: string }): Promise<{ organizationId: string; agentId: string | null; alreadyCompleted: boolean; analysis: boolean }> {
      const row = await mustLoad(callId);
      if (!ENDED.includes(row.status)) throw ApplicationFailure.retryable(`call ${callId} is still ${row.status}`, 'CallNotEnded');
      return { organizationId: row.organization_id, agentId: row.agent_uuid, alreadyCompleted: row.post_call_completed_at !== null, analysis: analysisOf(row.config_snapshot) !== null };
    },

    /** spool/recordings/<id>.wav → recordings/<id>.wav (validated WAV). Missing spool → null (recording disabled/failed). */
    async publishRecording({ callId }: { callId: string }): Promise<{ recordingUrl: string | null; durationSeconds: number | null }> {
      await mustLoad(callId);
      const finalKey = `recordings/${callId}.wav`;
      const spool = spoolRecordingKey(callId);
      let info: { durationSeconds: number } | null = null;
      if (!(await storage.exists(finalKey))) {
        const st = await storage.stat(spool);
        if (!st) {
          logger.info({ callId }, 'no recording in the spool: recordingUrl stays null');
          return { recordingUrl: null, durationSeconds: null };
        }
        try {
          info = parseWavHeader(await readHead(await storage.getStream(spool), 64 * 1024), st.bytes);
        } catch (err) {
          if (err instanceof InvalidWavError) throw ApplicationFailure.nonRetryable(`recording of ${callId}: ${err.message}`, 'InvalidRecording');
          throw err;
        }
        await withHeartbeat(async () => storage.put(finalKey, await storage.getStream(spool), { contentType: 'audio/wav' }));
      }
      const recordingUrl = storage.publicUrl(finalKey);
      await db.query(sql.unsafe`UPDATE calls SET recording_url = ${recordingUrl}, updated_at = now() WHERE id = ${callId}`);
      return { recordingUrl, durationSeconds: info?.durationSeconds ?? null };
    },

    /** transcripts/<id>.json as {messages: [...]} with the same content as the row's transcript. */
    async storeTranscript({ callId }: { callId: string }): Promise<{ transcriptUrl: string | null }> {
      const row = await mustLoad(callId);
      const messages = transcriptOf(row);
      if (messages === null) return { transcriptUrl: null };
      const key = `transcripts/${callId}.json`;
      await storage.put(key, Buffer.from(JSON.stringify({ messages })), { contentType: 'application/json' });
      const transcriptUrl = storage.publicUrl(key);
      await db.query(sql.unsafe`UPDATE calls SET transcript_url = ${transcriptUrl}, updated_at = now() WHERE id = ${callId}`);
      return { transcriptUrl };
    },

    /** Cost in USD from the usage media wrote and the price table (core/pricing.ts). */
    async computeUsageCost({ callId }: { callId: string }): Promise<{ cost: number; unpriced: string[] }> {
      const row = await mustLoad(callId);
      // A call whose process died mid-call (ended by a reconcile) has no usage: its recogniser still ran for the
      // call's duration, so it is priced as an STT entry with only provider and model (spec "usage" shape), by duration.
      const stt = (row.config_snapshot as { stt?: { provider?: unknown; model?: unknown } } | null)?.stt;
      const usage = row.usage ?? (row.ended_reason !== null && stt?.provider ? { stt: { provider: stt.provider, model: stt.model ?? null } } : null);
      const breakdown = computeCost(usage, { fallbackSttSeconds: row.duration_seconds });
      if (breakdown.unpriced.length) logger.warn({ callId, unpriced: breakdown.unpriced }, 'services missing from the price table were priced at 0');
      await db.query(sql.unsafe`UPDATE calls SET cost = ${breakdown.total}, updated_at = now() WHERE id = ${callId}`);
      return { cost: breakdown.total, unpriced: breakdown.unpriced };
    },

    /** 3-5 sentences from the agent's LLM provider when enableSummarization is true; otherwise null. */
    async summarizeCall({ callId }: { callId: string }): Promise<{ summary: string | null }> {
      const row = await mustLoad(callId);
      const snapshot = (row.config_snapshot ?? {}) as { enableSummarization?: unknown; llm?: { provider?: unknown; model?: unknown } };
      if (snapshot.enableSummarization !== true) return { summary: null };
      if (row.summary) return { summary: row.summary };
      const transcript = transcriptOf(row) ?? [];
      const meta = { durationSeconds: row.duration_seconds, endedReason: row.ended_reason };
      const spoken = transcript.some((e) => (e.role === 'user' || e.role === 'assistant') && e.content?.trim());
      const target = chatTarget(config, snapshot.llm ?? {});
      let summary: string | null;
      if (!spoken || target === 'extractive') {
        summary = extractiveSummary(transcript, meta);
      } else if (target === null) {
        throw ApplicationFailure.nonRetryable(`no summariser for LLM provider ${String(snapshot.llm?.provider)}`, 'SummaryUnavailable');
      } else {
        const beat = setInterval(() => heartbeat('waiting for the LLM'), 1000);
        try {
          summary = cleanSummary(await complete(target, SUMMARY_SYSTEM_PROMPT, summaryUserPrompt(transcript, meta), cancellationSignal()));
        } finally {
          clearInterval(beat);
        }
      }
      await db.query(sql.unsafe`UPDATE calls SET summary = ${summary}, updated_at = now() WHERE id = ${callId}`);
      return { summary };
    },

    /** The call's cost leaves the organization's wallet exactly once (ledger unique per call). */
    async debitWallet({ callId }: { callId: string }): Promise<{ debited: boolean; cost: number }> {
      const row = await mustLoad(callId);
      const cost = row.cost ?? 0;
      if (cost <= 0) return { debited: false, cost };
      const debited = await debitCall(db, row.organization_id, callId, cost);
      return { debited, cost };
    },

    /**
     * call.completed, at most once: the claim (completed_event_claimed_at) is committed before the POST, so a
     * retry after a crash finds it claimed and does not send again (delivery is at-most-once by the spec). Every
     * read and preparation (secret, payload, signature, target check) happens before the claim, so a worker killed
     * after it loses the event only while the request itself is being written.
     */
    async sendCallCompleted({ callId }: { callId: string }): Promise<{ outcome: 'sent' | 'failed' | 'no_webhook' | 'already_sent'; status?: number }> {
      const row = await mustLoad(callId);
      const webhook = row.completed_event_claimed_at === null ? webhookOf(row.config_snapshot) : null;
      const secret = webhook === null || row.agent_id === null
        ? null
        : await db.maybeOneFirst(sql.type(z.object({ webhook_secret: z.string().nullable() }))`
            SELECT webhook_secret FROM agents WHERE id = ${row.agent_id} AND organization_id = ${row.organization_id}`);
      const prepared = webhook === null ? null : await prepareWebhook({ url: webhook.url, headers: webhook.headers, secret, payload: callCompletedPayload(row), policy, logger }, true);
      // the request is under way (connected, headers sent) while the claim commits; its body follows the claim
      let settle: (claimed: boolean) => void = () => {};
      const delivery = prepared === null ? null : deliverWebhook(prepared, new Promise<boolean>((r) => { settle = r; }));
      let claimed: { id: string } | null;
      try {
        claimed = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
          UPDATE calls SET completed_event_claimed_at = now(), updated_at = now()
          WHERE id = ${callId} AND completed_event_claimed_at IS NULL RETURNING id`);
      } catch (err) {
        settle(false);
        await delivery;
        throw err;
      }
      settle(claimed !== null);
      const result = await delivery;
      if (!claimed) return { outcome: 'already_sent' };
      if (!result) return { outcome: 'no_webhook' };
      await recordWebhookResult(db, callId, 'call.completed', result);
      return { outcome: result.ok ? 'sent' : 'failed', status: result.status };
    },

    /** Notes a step that failed for good on calls.logs.post_call_errors (the rest of the workflow continues). */
    async recordPostCallIssue({ callId, step, error }: { callId: string; step: string; error: string }): Promise<void> {
      const entry = JSON.stringify({ step, error: error.slice(0, 1000), at: new Date().toISOString() });
      await db.query(sql.unsafe`
        UPDATE calls SET logs = jsonb_set(logs, '{post_call_errors}', COALESCE(logs->'post_call_errors', '[]'::jsonb) || jsonb_build_array(${entry}::jsonb)),
               updated_at = now()
        WHERE id = ${callId}`);
    },

    /** Marks the post-processing done (transfer-recording waits for it) and drops the spool file when it is no longer needed. */
    async finishPostCall({ callId, dropSpool }: { callId: string; dropSpool: boolean }): Promise<void> {
      await db.query(sql.unsafe`UPDATE calls SET post_call_completed_at = COALESCE(post_call_completed_at, now()), updated_at = now() WHERE id = ${callId}`);
      if (dropSpool) await storage.delete(spoolRecordingKey(callId));
    },
  };
}

export type PostCallActivities = ReturnType<typeof createPostCallActivities>;
