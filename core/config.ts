// Configuration read from the environment once at start and validated.
// A bad value stops the process with a message naming the variable.
import { z } from 'zod';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(0).max(65535);
const url = z.string().url();

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port.default(8080),
  HOST: z.string().default('0.0.0.0'),
  /** Public base of the service as clients reach it (no trailing slash, no /api/v1). */
  PUBLIC_URL: url.optional(),
  /** Where the worker's simulated callers (agent tests) reach the public API and audio WebSocket: scheme, host and
   * port (default PUBLIC_URL; in docker compose the proxy's address inside the network). */
  AGENT_TEST_API_URL: url.optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'must be host:port').optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('voice-agent'),
  /** Temporal Web UI the operator console links campaign workflows to (default: the local dev server's UI). */
  TEMPORAL_UI_URL: url.default('http://localhost:8233'),
  DATA_DIR: z.string().default('.data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** OTLP/HTTP collector base (spans go to {this}/v1/traces). Unset: no tracing at all (core/tracing.ts). */
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  /** service.name of this process's spans (default voice-agent-api / -media / -worker / voice-agent for npm start). */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** Secret used to sign local presigned URLs and carrier stream URLs. Generated into DATA_DIR when unset. */
  SIGNING_SECRET: z.string().min(16).optional(),
  CDN_URL: url.optional(),
  STORAGE_DIR: z.string().optional(),
  S3_BUCKET: z.string().optional(),
  S3_ENDPOINT: url.optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_PUBLIC_URL: url.optional(),
  S3_FORCE_PATH_STYLE: bool.default(true),
  DEFAULT_RATE_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  DEFAULT_CONCURRENCY: z.coerce.number().int().min(1).default(10),
  WALLET_MIN_BALANCE_USD: z.coerce.number().min(0).default(0.5),
  CALL_JOIN_TIMEOUT_S: z.coerce.number().int().min(5).max(3600).default(60),
  /** Comma-separated hosts/CIDRs that webhooks and inline tools may reach despite being private. */
  OUTBOUND_ALLOW_HOSTS: z.string().default(''),
  /** Comma-separated host names always refused for outbound requests. */
  OUTBOUND_BLOCK_HOSTS: z.string().default('metadata.google.internal,metadata,instance-data'),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: url.default('https://api.openai.com/v1'),
  GROQ_API_KEY: z.string().optional(),
  GROQ_BASE_URL: url.default('https://api.groq.com/openai/v1'),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: url.default('https://api.anthropic.com'),
  GOOGLE_API_KEY: z.string().optional(),
  GOOGLE_BASE_URL: url.default('https://generativelanguage.googleapis.com'),
  LOCAL_LLM_BASE_URL: url.optional(),
  LOCAL_LLM_MODEL: z.string().optional(),
  /** Python with PocketSphinx 5 for the local STT (default: .data/stt-venv/bin/python made by scripts/setup.sh). */
  LOCAL_STT_PYTHON: z.string().optional(),
  /** Python 3 (standard library only) that runs the local TTS's eSpeak NG synthesizers (default: python3). */
  LOCAL_TTS_PYTHON: z.string().optional(),
  SONIOX_API_KEY: z.string().optional(),
  SONIOX_BASE_URL: url.default('https://stt-rt.soniox.com'),
  DEEPGRAM_API_KEY: z.string().optional(),
  DEEPGRAM_BASE_URL: url.default('https://api.deepgram.com'),
  ASSEMBLYAI_API_KEY: z.string().optional(),
  ASSEMBLYAI_BASE_URL: url.default('https://streaming.assemblyai.com'),
  SARVAM_API_KEY: z.string().optional(),
  SARVAM_BASE_URL: url.default('https://api.sarvam.ai'),
  CARTESIA_API_KEY: z.string().optional(),
  CARTESIA_BASE_URL: url.default('https://api.cartesia.ai'),
  ELEVENLABS_API_KEY: z.string().optional(),
  ELEVENLABS_BASE_URL: url.default('https://api.elevenlabs.io'),
  XAI_API_KEY: z.string().optional(),
  XAI_BASE_URL: url.default('https://api.x.ai'),
  INWORLD_API_KEY: z.string().optional(),
  INWORLD_BASE_URL: url.default('https://api.inworld.ai'),
  EMBEDDING_BASE_URL: url.optional(),
  EMBEDDING_API_KEY: z.string().optional(),
  EMBEDDING_MODEL: z.string().default('text-embedding-3-small'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10000),
  /** Carrier REST endpoints: each override replaces scheme, host and port only (core/telephony/urls.ts withBase). */
  TWILIO_API_BASE_URL: url.default('https://api.twilio.com'),
  SMARTFLO_API_BASE_URL: url.default('https://api-smartflo.tatateleservices.com'),
  PLIVO_API_BASE_URL: url.default('https://api.plivo.com'),
  TELNYX_API_BASE_URL: url.default('https://api.telnyx.com'),
  /** Vonage has two REST hosts (api.nexmo.com for calls/applications, rest.nexmo.com for numbers): both follow it. */
  VONAGE_API_BASE_URL: url.optional(),
  EXOTEL_API_BASE_URL: url.optional(),
  /** AES-256-GCM key for carrier credentials at rest (64 hex chars, or a passphrase); derived from the signing secret when unset. */
  TELEPHONY_ENCRYPTION_KEY: z.string().min(16).optional(),
  /** A phone call still pending this long after creation (no media stream, no carrier status) ends as never connected. */
  PHONE_PENDING_TIMEOUT_S: z.coerce.number().int().min(30).max(3600).default(180),
  /** WebRTC (browser calls): STUN/TURN servers (JSON array of RTCIceServer, or comma-separated stun:/turn: URLs). Default none. */
  WEBRTC_ICE_SERVERS: z.string().optional(),
  /** UDP ports the media process uses for WebRTC, "min-max" (default: the OS picks ephemeral ports). */
  WEBRTC_PORT_RANGE: z.string().regex(/^\d{4,5}-\d{4,5}$/, 'must be "min-max", e.g. 40000-40100')
    .refine((v) => { const [a, b] = v.split('-').map(Number) as [number, number]; return a >= 1024 && b <= 65535 && a <= b; }, 'ports must satisfy 1024 <= min <= max <= 65535')
    .optional(),
  /** Local address the WebRTC UDP sockets bind to (default: all interfaces). */
  WEBRTC_BIND_ADDRESS: z.union([z.ipv4(), z.ipv6()]).optional(),
  /** Public address written into the server's ICE host candidates (1:1 NAT, containers publishing the port range). */
  WEBRTC_ANNOUNCED_ADDRESS: z.union([z.ipv4(), z.ipv6()]).optional(),
  /** Worker processes running the Opus codec of WebRTC calls (default 0 = on the event loop; media/webrtc/codec-pool.ts). */
  WEBRTC_CODEC_THREADS: z.coerce.number().int().min(0).max(64).optional(),
  /** With codec workers: caller audio decoded on them ('thread') or on the event loop ('inline': only encoding moves). */
  WEBRTC_CODEC_DECODE: z.enum(['inline', 'thread']).default('thread'),
  /** libopus complexity (0–10) of the agent-audio encoder of WebRTC calls (media/webrtc/call-codec.ts reads it from the
   * environment, so codec workers and the media-plane thread use the same); default there. */
  WEBRTC_OPUS_COMPLEXITY: z.coerce.number().int().min(0).max(10).optional(),
  /** Run every WebRTC peer (node-datachannel, Opus, jitter buffer, SRTP) on one media-plane thread beside the
   * pipeline (media/webrtc/plane.ts); off: on the event loop. WEBRTC_CODEC_THREADS does not apply with it on. */
  WEBRTC_MEDIA_THREAD: bool.default(false),
  /** Seconds an answered offer may take to connect before the call ends no_participant. */
  WEBRTC_CONNECT_TIMEOUT_S: z.coerce.number().int().min(2).max(600).default(30),
  /** Calls one media process accepts at once; past it new joins are refused (1013). Default: cores × CALLS_PER_CORE (core/media-nodes.ts). */
  MEDIA_MAX_CALLS: z.coerce.number().int().min(1).max(100000).optional(),
  /** nice levels the media process raises the thread that paces audio by (core/priority.ts); unset: 10 where
   * permitted (CAP_SYS_NICE), quietly nothing where not; 0: off */
  MEDIA_PRIORITY_BOOST: z.coerce.number().int().min(0).max(39).optional(),
  /** A CPU for the thread that paces audio alone (core/affinity.ts): the media process's other threads and helper
   * processes run on its other CPUs; keeping other processes off it is the operator's cpuset. Unset: no pinning. */
  MEDIA_PACING_CPU: z.coerce.number().int().min(0).max(4095).optional(),
  /** This media node's own public origin, when clients can reach it directly (POST /call steers calls to it:
   * docs/operations.md). Default: PUBLIC_URL, the address shared by every node behind the proxy. */
  MEDIA_PUBLIC_URL: url.optional(),
  /** A media node whose heartbeat is older than this is dead: its active calls are reconciled by a live node. */
  MEDIA_NODE_DEAD_AFTER_S: z.coerce.number().int().min(2).max(3600).default(45),
  /** Where media spools call recordings while calls run (default DATA_DIR/media-spool; local disk, not shared). */
  MEDIA_SPOOL_DIR: z.string().optional(),
  /** Recogniser processes of the local STT pool per media process (default: one per core). */
  LOCAL_STT_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  /** eSpeak NG synthesizer processes of the local TTS per media process (default: one per core). */
  LOCAL_TTS_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  /** Smart Turn (end-of-turn model) inference processes per media process (default: one per core). */
  LOCAL_TURN_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  /** Rendered greeting / idle-prompt audio kept per media process (MB; 0 disables; default 64, 0 under NODE_ENV=test). */
  MEDIA_TTS_CACHE_MB: z.coerce.number().min(0).max(4096).optional(),
});

export type Config = z.infer<typeof configSchema> & {
  /** Derived: http(s)://host:port without /api/v1. */
  publicUrl: string;
  /** Derived: {base_url} = publicUrl + /api/v1 */
  baseUrl: string;
  cdnUrl: string;
  storageDir: string;
};

export class ConfigError extends Error {}

/** Parse an environment. Throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean unset: `FOO= npm start` should not fail validation.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message} (got ${JSON.stringify(cleaned[String(i.path[0])])})`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  const publicUrl = (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, '');
  return {
    ...c,
    publicUrl,
    baseUrl: `${publicUrl}/api/v1`,
    cdnUrl: (c.CDN_URL ?? `${publicUrl}/cdn`).replace(/\/+$/, ''),
    storageDir: c.STORAGE_DIR ?? `${c.DATA_DIR}/storage`,
  };
}

/** For process entry points: load or print the error and exit(1). */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
