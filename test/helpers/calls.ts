// Pending call rows (as POST /call leaves them) and a scripted WebSocket caller for media tests.
import { z } from 'zod';
import WebSocket from 'ws';
import { sql, type Db } from '../../core/db/pool.ts';
import { until } from './wait.ts';

/** A minimal resolved AgentConfig for fake engines; override any field. */
export function agentConfig(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'test agent',
    languages: ['en'],
    systemPrompt: 'You are a helpful test agent.',
    greeting: { firstMessages: ['Hello, how can I help?'], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 3 },
    llm: { provider: 'fake', model: 'fake-llm', temperature: 0.5, maxTokens: 100, prewarm: true },
    stt: { provider: 'fake', model: null, interruptionMinWords: 0 },
    tts: { provider: 'fake', model: null, voice: null },
    noiseGate: { enabled: false, model: 'voice-focus', enhancementLevel: 0.8 },
    userIdleTimeoutS: 25,
    userIdleMessages: ['Are you still there?'],
    userIdleMaxRetries: 2,
    maxCallDurationS: 610,
    tools: [{ type: 'endCall', name: 'end_call', description: 'End the call', config: { messageType: 'custom', customMessages: ['Goodbye!'] } }],
    webhook: null,
    contextVariables: {},
    ...over,
  };
}

export async function insertPendingCall(
  db: Db,
  o: { orgId: string; config: Record<string, unknown>; transport?: string; agentId?: number | null; agentUuid?: string | null; contextVariables?: Record<string, string> },
): Promise<string> {
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO calls (organization_id, agent_id, agent_uuid, agent_name, transport, status, call_source, config_snapshot, context_variables)
    VALUES (${o.orgId}, ${o.agentId ?? null}, ${o.agentUuid ?? null}, ${String(o.config.name ?? 'agent')}, ${o.transport ?? 'websocket'}, 'pending',
            ${o.transport === 'webrtc' ? 'webrtc' : 'websocket'}, ${JSON.stringify(o.config)}::jsonb, ${JSON.stringify(o.contextVariables ?? {})}::jsonb)
    RETURNING id::text`);
}

export const callRowSchema = z.object({
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  duration_seconds: z.number().nullable(),
  transcript: z.any(),
  usage: z.any(),
  logs: z.any(),
  media_node: z.string().nullable(),
});

export async function getCallRow(db: Db, callId: string) {
  return db.one(sql.type(callRowSchema)`
    SELECT status, connection_status, ended_reason, started_at, ended_at, duration_seconds, transcript, usage, logs, media_node
    FROM calls WHERE id = ${callId}`);
}

/** The row once the call has ended (status no longer pending/active). */
export function endedRow(db: Db, callId: string, timeoutMs = 30_000) {
  return until(async () => {
    const r = await getCallRow(db, callId);
    return r.status === 'completed' || r.status === 'error' ? r : null;
  }, { what: `call ${callId} to end`, timeoutMs });
}

export interface ServerEvent {
  type: string;
  payload?: { text: string; final?: boolean };
  message?: string;
  at: number;
}

/** A WebSocket caller: sends 20 ms frames of tone (speech) or zeros (silence) in real time; records what comes back. */
export class TestCaller {
  readonly events: ServerEvent[] = [];
  audioBytes = 0;
  /** agent audio received (24 kHz s16le frames, in order) */
  readonly audio: Buffer[] = [];
  /** arrival time of each binary frame */
  readonly frameTimes: number[] = [];
  firstAudioAt: number | null = null;
  closeCode: number | null = null;
  closeReason = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  opened = false;

  private constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        resolve({ code, reason: this.closeReason });
      });
    });
    ws.on('open', () => (this.opened = true));
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => {
      const now = performance.now();
      if (isBinary) {
        const b = data as Buffer;
        this.audioBytes += b.length;
        this.audio.push(b);
        this.frameTimes.push(now);
        this.firstAudioAt ??= now;
      } else {
        this.events.push({ ...(JSON.parse(String(data)) as Omit<ServerEvent, 'at'>), at: now });
      }
    });
  }

  static connect(origin: string, callId: string, key: string | null, o: { header?: boolean } = {}): TestCaller {
    const url = `${origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${callId}${key && !o.header ? `?api_key=${encodeURIComponent(key)}` : ''}`;
    const ws = new WebSocket(url, o.header && key ? { headers: { 'X-API-Key': key } } : {});
    return new TestCaller(ws);
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  waitOpen(): Promise<void> {
    if (this.opened) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('close', () => reject(new Error(`closed before open: ${this.closeCode} ${this.closeReason}`)));
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
  }

  /** all agent audio received so far, 24 kHz mono */
  receivedPcm(): Int16Array {
    const all = Buffer.concat(this.audio);
    const pcm = new Int16Array(all.length >> 1);
    for (let i = 0; i < pcm.length; i++) pcm[i] = all.readInt16LE(2 * i);
    return pcm;
  }

  /** seconds of agent audio received */
  get audioSeconds(): number {
    return this.audioBytes / 2 / 24000;
  }

  private async stream(ms: number, amplitude: number): Promise<void> {
    const frames = Math.round(ms / 20);
    const start = performance.now();
    let phase = 0;
    for (let i = 0; i < frames && this.isOpen; i++) {
      const pcm = new Int16Array(320);
      if (amplitude) for (let k = 0; k < 320; k++) pcm[k] = Math.round(amplitude * Math.sin((phase += (2 * Math.PI * 220) / 16000)));
      this.ws.send(Buffer.from(pcm.buffer));
      const due = start + (i + 1) * 20;
      const delay = due - performance.now();
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    }
  }
  /** caller talks (tone) for ms */
  speak(ms: number): Promise<void> {
    return this.stream(ms, 8000);
  }
  /** caller is silent (zeros) for ms */
  silence(ms: number): Promise<void> {
    return this.stream(ms, 0);
  }

  waitEvent(pred: (e: ServerEvent) => boolean, timeoutMs = 20_000, what = 'event'): Promise<ServerEvent> {
    return until(() => this.events.find(pred), { what, timeoutMs });
  }
  botTexts(): string[] {
    return this.events.filter((e) => e.type === 'rtf-bot-text').map((e) => e.payload!.text);
  }
  /** wait until agent audio has been flowing and then stopped for quietMs */
  async waitAgentQuiet(quietMs = 300, timeoutMs = 20_000): Promise<void> {
    await until(() => {
      const last = this.frameTimes[this.frameTimes.length - 1];
      return last !== undefined && performance.now() - last > quietMs;
    }, { what: 'agent to finish speaking', timeoutMs });
  }
  /** One turn of a scripted call: the greeting heard to its end, 0.9 s of talk and 0.4 s of silence, the reply
   * matching `reply` heard to its end; then the caller hangs up. */
  async oneTurn(reply: RegExp, greeting = 'Hello, how can I help?'): Promise<void> {
    await this.waitOpen();
    await this.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === greeting, 20_000, 'the greeting');
    await this.waitAgentQuiet();
    await this.speak(900);
    await this.silence(400);
    await this.waitEvent((e) => e.type === 'rtf-bot-text' && reply.test(e.payload!.text), 20_000, 'the reply');
    await this.waitAgentQuiet();
    this.close();
  }
  close(): void {
    this.ws.close(1000);
  }
}
