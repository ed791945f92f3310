// The simulated caller of an agent test: a client of the public WebSocket protocol (spec "WebSocket audio
// protocol") built from the same engine adapters the agents use (media/services). It speaks with its own TTS into
// the call (16 kHz PCM in 20 ms frames, paced in real time, silence between its turns like a microphone), hears the
// agent with its own STT (the 24 kHz audio the call sends), and decides what to say with its own LLM, prompted with
// the test's scenario (core/agent-tests/caller-prompt.ts). In text mode (`?mode=text`, media/session/text-mode.ts)
// it exchanges text instead: `user-text` messages out, `rtf-bot-text` / `rtf-bot-turn-end` in.
//
// Turn-taking: the agent's turn is over when its audio has been quiet for `agentTurnEndMs` after it spoke and the text
// chunk last announced (`rtf-bot-text`) has had time to be said (the STT is then finalized and its text is the
// agent's line), or, in text mode, at `rtf-bot-turn-end`. The caller waits
// `openerWaitMs` for a greeting and speaks first when none comes. The conversation ends when the caller hangs up
// (its model writes the hang-up marker), the agent hangs up (the server closes the socket with 1000), the caller has
// had `maxTurns` turns and heard the answer to its last one (it is not told of the limit, so a short test is not a
// hurried caller), or `maxDurationMs` has passed. An agent that says
// nothing for `agentSilenceMs` after the caller spoke fails the conversation (AgentSilentError).
import WebSocket from 'ws';
import { Resampler } from '../core/audio/resample.ts';
import { callerMessages, cleanCallerReply } from '../core/agent-tests/caller-prompt.ts';
import type { EndedBy, TranscriptLine } from '../core/agent-tests/schemas.ts';
import type { LlmService, SttService, SttStream, TtsService } from '../media/services/types.ts';

export interface SimulatedCallerOptions {
  /** ws(s)://…/api/v1/ws/audio/<callId> (POST /call's audioUrl) */
  audioUrl: string;
  apiKey: string;
  mode: 'audio' | 'text';
  scenario: string;
  maxTurns: number;
  maxDurationMs: number;
  languages: string[];
  llm: LlmService;
  /** audio mode only */
  stt?: SttService;
  tts?: TtsService;
  temperature?: number;
  maxTokens?: number;
  openerWaitMs?: number;
  agentSilenceMs?: number;
  agentTurnEndMs?: number;
  /** a line was added to the transcript (the activity stores the conversation so far) */
  onLine?(line: TranscriptLine, transcript: readonly TranscriptLine[]): void;
  /** called at least every second while the conversation runs (activity heartbeats) */
  onTick?(state: { turns: number }): void;
  signal?: AbortSignal;
}

export interface ConversationResult {
  transcript: TranscriptLine[];
  endedBy: EndedBy;
  /** the caller's turns */
  turns: number;
}

/** Why a conversation could not be had; `kind` tells the activity whether another attempt could help. */
export class ConversationError extends Error {
  override readonly name = 'ConversationError';
  constructor(
    readonly kind: 'connect' | 'agent_silent' | 'call_failed' | 'caller_engine' | 'aborted',
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

const FRAME_SAMPLES = 320; // 20 ms at 16 kHz
const FRAME_MS = 20;
/** agent audio louder than this (RMS of a 24 kHz frame, ≈ −40 dBFS) is speech */
const VOICED_RMS = 330;
const FINAL_WAIT_MS = 4000;
const MAX_RETHINKS = 3;
/** how long a character of the agent's text takes to say, about (15 characters a second, a slow speaker) */
const SPOKEN_MS_PER_CHAR = 65;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function rms(pcm: Int16Array): number {
  let s = 0;
  for (let i = 0; i < pcm.length; i++) s += pcm[i]! * pcm[i]!;
  return pcm.length ? Math.sqrt(s / pcm.length) : 0;
}

/** What a transport to the call offers the conversation: hear the agent's next turn, say one line, hang up. */
interface Link {
  /** 'turn' with the agent's line (text may be empty: it spoke, nothing was recognised); 'none' when it did not start within waitMs */
  listen(waitMs: number, deadline: number): Promise<{ kind: 'turn'; text: string; at: string } | { kind: 'none' | 'closed' | 'time' }>;
  say(text: string): Promise<void>;
  hangUp(): Promise<void>;
  readonly closed: { code: number; reason: string } | null;
  /** the last `error` event the server sent */
  readonly lastError: string | null;
  /** the agent has started saying something since listen() last returned its turn */
  agentSpokeSinceTurn(): boolean;
  close(): void;
  release(): Promise<void>;
}

function connect(url: string, apiKey: string, signal?: AbortSignal): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { 'X-API-Key': apiKey }, handshakeTimeout: 15_000 });
    const fail = (e: ConversationError) => {
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
      reject(e);
    };
    ws.once('open', () => {
      ws.removeAllListeners('unexpected-response');
      resolve(ws);
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => fail(new ConversationError('connect', `the audio WebSocket refused the caller: HTTP ${res.statusCode} ${body.slice(0, 200)}`, (res.statusCode ?? 0) >= 500)));
    });
    ws.once('close', (code, reason) => fail(new ConversationError('connect', `the audio WebSocket closed before the call started: ${code} ${reason.toString()}`)));
    ws.once('error', (err) => fail(new ConversationError('connect', `the audio WebSocket could not be reached: ${err.message}`, true)));
    signal?.addEventListener('abort', () => fail(new ConversationError('aborted', 'cancelled')), { once: true });
  });
}

/** Shared by both links: the socket's close and the server's error events. */
abstract class BaseLink implements Link {
  closed: { code: number; reason: string } | null = null;
  lastError: string | null = null;
  protected readonly closedP: Promise<void>;

  constructor(protected readonly ws: WebSocket) {
    this.closedP = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closed = { code, reason: reason.toString() };
        this.onClosed();
        resolve();
      });
    });
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.onAudio(data as Buffer);
      let ev: { type?: string; message?: unknown; payload?: { text?: unknown; final?: unknown } };
      try {
        ev = JSON.parse(String(data));
      } catch {
        return;
      }
      if (ev.type === 'error' && typeof ev.message === 'string') this.lastError = ev.message;
      else this.onEvent(ev);
    });
  }

  protected onAudio(_data: Buffer): void {}
  protected onEvent(_ev: { type?: string; payload?: { text?: unknown; final?: unknown } }): void {}
  protected onClosed(): void {}

  abstract listen(waitMs: number, deadline: number): ReturnType<Link['listen']>;
  abstract say(text: string): Promise<void>;
  abstract agentSpokeSinceTurn(): boolean;

  async hangUp(): Promise<void> {
    if (!this.closed) this.ws.close(1000);
    await Promise.race([this.closedP, sleep(5000)]);
  }

  close(): void {
    if (!this.closed) this.ws.terminate();
  }

  /** The caller's engines are let go (the conversation is over, however it ended). */
  async release(): Promise<void> {}
}

/** Audio: the caller's microphone and ears on the call. */
class AudioLink extends BaseLink {
  private readonly out: Int16Array[] = [];
  private outOffset = 0;
  private ticker: NodeJS.Timeout | null = null;
  private readonly down = new Resampler(24000, 16000);
  private stream: SttStream | null = null;
  private heard = '';
  private interim = '';
  private finals = 0;
  /** performance.now() of the latest voiced agent frame, and of the first one after the last listen() consumed a turn */
  private lastVoicedAt = -Infinity;
  private firstVoicedAt: number | null = null;
  private firstVoicedWall: string | null = null;
  /** 16 kHz samples given to the STT, and when its timeline began: the gaps between agent audio are silence to it */
  private heardSamples = 0;
  /** performance.now() until which the agent's current chunk of text is still being said (see onEvent) */
  private chunkUntil = 0;
  private heardSince = 0;

  constructor(ws: WebSocket, private readonly opts: { stt: SttService; tts: TtsService; languages: string[]; agentTurnEndMs: number; signal?: AbortSignal }) {
    super(ws);
  }

  async start(): Promise<void> {
    this.stream = await this.opts.stt.open({
      languages: this.opts.languages,
      keyterms: [],
      onEvent: (ev) => {
        if (ev.type === 'final' || ev.type === 'turn_end') {
          if (ev.text.trim()) this.heard = `${this.heard} ${ev.text.trim()}`.trim();
          this.interim = '';
          this.finals++;
        } else if (ev.type === 'interim') this.interim = ev.text;
        else if (ev.type === 'error' && ev.error.fatal) this.lastError = `the caller's STT failed: ${ev.error.message}`;
      },
    });
    this.heardSince = performance.now();
    this.startMicrophone();
  }

  /**
   * The call sends audio only while the agent speaks; a phone line carries silence in between, and the recogniser
   * needs it to find the end of an utterance (vendor endpointing runs on the audio's own timeline). Tops the STT's
   * input up with silence to real time, one frame behind it (the agent's audio arrives paced, a little ahead).
   */
  private padSilence(): void {
    const due = Math.floor(((performance.now() - this.heardSince) * 16000) / 1000);
    const gap = due - this.heardSamples - FRAME_SAMPLES;
    if (gap < 2 * FRAME_SAMPLES) return;
    const n = Math.min(gap, 50 * FRAME_SAMPLES);
    this.stream?.write(new Int16Array(n));
    this.heardSamples += n;
  }

  /** 20 ms frames in real time: the caller's queued speech, else silence (a microphone keeps sending). */
  private startMicrophone(): void {
    const t0 = performance.now();
    let n = 0; // frames sent
    const silence = Buffer.alloc(FRAME_SAMPLES * 2);
    const tick = () => {
      this.ticker = null;
      if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
      this.padSilence();
      const due = Math.floor((performance.now() - t0) / FRAME_MS) + 1;
      // after a stall (a busy event loop), catch up by at most 5 frames: no burst of old audio
      if (due - n > 5) n = due - 5;
      while (n < due) {
        const frame = this.takeFrame();
        this.ws.send(frame ? Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength) : silence);
        n++;
      }
      this.ticker = setTimeout(tick, Math.max(1, t0 + n * FRAME_MS - performance.now()));
    };
    tick();
  }

  private takeFrame(): Int16Array | null {
    if (!this.out.length) return null;
    const frame = new Int16Array(FRAME_SAMPLES);
    let filled = 0;
    while (filled < FRAME_SAMPLES && this.out.length) {
      const head = this.out[0]!;
      const take = Math.min(FRAME_SAMPLES - filled, head.length - this.outOffset);
      frame.set(head.subarray(this.outOffset, this.outOffset + take), filled);
      filled += take;
      this.outOffset += take;
      if (this.outOffset >= head.length) {
        this.out.shift();
        this.outOffset = 0;
      }
    }
    return frame;
  }

  protected override onAudio(data: Buffer): void {
    const pcm = new Int16Array(data.length >> 1);
    for (let i = 0; i < pcm.length; i++) pcm[i] = data.readInt16LE(2 * i);
    if (rms(pcm) > VOICED_RMS) {
      const now = performance.now();
      this.lastVoicedAt = now;
      if (this.firstVoicedAt === null) {
        this.firstVoicedAt = now;
        this.firstVoicedWall = new Date().toISOString();
      }
    }
    const pcm16 = this.down.process(pcm);
    if (pcm16.length) {
      this.stream?.write(pcm16);
      this.heardSamples += pcm16.length;
    }
  }

  /**
   * `rtf-bot-text` comes as a chunk of the agent's reply starts playing: until that chunk could have been said
   * (SPOKEN_MS_PER_CHAR per character), a pause in its audio (a TTS slower than real time) is not the end of its turn.
   */
  protected override onEvent(ev: { type?: string; payload?: { text?: unknown } }): void {
    if (ev.type === 'rtf-bot-text' && typeof ev.payload?.text === 'string') {
      this.chunkUntil = Math.max(this.chunkUntil, performance.now() + ev.payload.text.length * SPOKEN_MS_PER_CHAR);
    }
  }

  protected override onClosed(): void {
    if (this.ticker) clearTimeout(this.ticker);
    this.ticker = null;
  }

  async listen(waitMs: number, deadline: number): ReturnType<Link['listen']> {
    const start = performance.now();
    for (;;) {
      if (this.opts.signal?.aborted) throw new ConversationError('aborted', 'cancelled');
      const now = performance.now();
      const spoke = this.firstVoicedAt !== null;
      if (spoke && now - this.lastVoicedAt >= this.opts.agentTurnEndMs && now >= this.chunkUntil) {
        // the agent went quiet: what did the STT make of it?
        const resumed = await this.awaitFinal();
        if (!resumed) return this.takeTurn();
        continue;
      }
      if (this.closed) {
        if (!spoke) return { kind: 'closed' };
        await this.awaitFinal();
        return this.takeTurn();
      }
      if (Date.now() >= deadline) return { kind: 'time' };
      if (!spoke && now - start >= waitMs) return { kind: 'none' };
      await sleep(50);
    }
  }

  /**
   * Finalize the STT and wait for its final (briefly when everything heard is final already, up to FINAL_WAIT_MS
   * while words are pending); true when the agent started speaking again meanwhile.
   */
  private async awaitFinal(): Promise<boolean> {
    const before = this.finals;
    const quietSince = this.lastVoicedAt;
    const settled = this.heard !== '' && this.interim === '';
    this.stream?.finalize();
    const until = performance.now() + (settled ? 300 : FINAL_WAIT_MS);
    while (performance.now() < until) {
      if (this.lastVoicedAt > quietSince && !this.closed) return true;
      if (!settled && this.finals > before) {
        await sleep(150); // a second final of the same audio, from engines that split it
        return this.lastVoicedAt > quietSince && !this.closed;
      }
      await sleep(30);
    }
    return false;
  }

  agentSpokeSinceTurn(): boolean {
    return this.firstVoicedAt !== null;
  }

  private takeTurn(): { kind: 'turn'; text: string; at: string } {
    const text = (this.heard || this.interim).trim();
    const at = this.firstVoicedWall ?? new Date().toISOString();
    this.heard = '';
    this.interim = '';
    this.firstVoicedAt = null;
    this.firstVoicedWall = null;
    return { kind: 'turn', text, at };
  }

  async say(text: string): Promise<void> {
    const to16k = new Resampler(24000, 16000);
    const signal = this.opts.signal ?? new AbortController().signal;
    try {
      for await (const pcm of this.opts.tts.synthesize(text, signal)) {
        const pcm16 = to16k.process(pcm);
        if (pcm16.length) this.out.push(pcm16);
        if (this.closed) return;
      }
    } catch (err) {
      throw new ConversationError('caller_engine', `the caller's TTS failed: ${(err as Error).message}`, (err as { engineError?: { retryable?: boolean } }).engineError?.retryable ?? false);
    }
    const tail = to16k.flush();
    if (tail.length) this.out.push(tail);
    // spoken once the microphone has sent it all (plus two frames of room)
    while (this.out.length && !this.closed) await sleep(FRAME_MS);
    await sleep(2 * FRAME_MS);
  }

  override async release(): Promise<void> {
    this.onClosed();
    const stream = this.stream;
    this.stream = null;
    await Promise.allSettled([stream?.close(), this.opts.tts.close?.()]);
  }
}

/** Text mode: typed turns out, the agent's text in. */
class TextLink extends BaseLink {
  private text = '';
  private at: string | null = null;
  private turnEnded = false;

  protected override onEvent(ev: { type?: string; payload?: { text?: unknown } }): void {
    if (ev.type === 'rtf-bot-text' && typeof ev.payload?.text === 'string') {
      this.at ??= new Date().toISOString();
      this.text = `${this.text} ${ev.payload.text.trim()}`.trim();
    } else if (ev.type === 'rtf-bot-turn-end' && this.text) {
      // an utterance without text (a tool call with nothing said yet) is not the end of the agent's turn
      this.turnEnded = true;
    }
  }

  constructor(ws: WebSocket, private readonly signal?: AbortSignal) {
    super(ws);
  }

  async listen(waitMs: number, deadline: number): ReturnType<Link['listen']> {
    const start = performance.now();
    for (;;) {
      if (this.signal?.aborted) throw new ConversationError('aborted', 'cancelled');
      if (this.turnEnded || (this.closed && this.text)) {
        const line = { kind: 'turn' as const, text: this.text, at: this.at ?? new Date().toISOString() };
        this.text = '';
        this.at = null;
        this.turnEnded = false;
        return line;
      }
      if (this.closed) return { kind: 'closed' };
      if (Date.now() >= deadline) return { kind: 'time' };
      if (!this.text && performance.now() - start >= waitMs) return { kind: 'none' };
      await sleep(20);
    }
  }

  agentSpokeSinceTurn(): boolean {
    return this.text !== '';
  }

  async say(text: string): Promise<void> {
    if (!this.closed) this.ws.send(JSON.stringify({ type: 'user-text', text }));
  }
}

async function callerReply(o: SimulatedCallerOptions, transcript: TranscriptLine[]): Promise<{ text: string; hangUp: boolean }> {
  const messages = callerMessages(o.scenario, transcript);
  for (let attempt = 1; ; attempt++) {
    let raw = '';
    try {
      for await (const c of o.llm.stream({ messages, tools: [], temperature: o.temperature ?? 0.7, maxTokens: o.maxTokens ?? 80, signal: o.signal ?? new AbortController().signal })) {
        if (c.type === 'text') raw += c.delta;
      }
    } catch (err) {
      if (o.signal?.aborted) throw new ConversationError('aborted', 'cancelled');
      const e = (err as { engineError?: { retryable?: boolean; fatal?: boolean } }).engineError;
      if (e?.retryable && !e.fatal && attempt < 3) {
        await sleep(1000 * attempt);
        continue;
      }
      throw new ConversationError('caller_engine', `the caller's LLM failed: ${(err as Error).message}`, e?.retryable ?? false);
    }
    const reply = cleanCallerReply(raw);
    // nothing sayable (the model wrote only a marker or a stage direction): a short line still keeps the call going
    if (!reply.text) return reply.hangUp ? { text: 'Okay, thank you. Goodbye.', hangUp: true } : { text: 'Sorry, could you say that again?', hangUp: false };
    return reply;
  }
}

/** Place the simulated caller on the call at `audioUrl` and have the conversation. */
export async function runSimulatedCaller(o: SimulatedCallerOptions): Promise<ConversationResult> {
  const openerWaitMs = o.openerWaitMs ?? 4000;
  const agentSilenceMs = o.agentSilenceMs ?? 20_000;
  const url = new URL(o.audioUrl);
  if (o.mode === 'text') url.searchParams.set('mode', 'text');
  if (o.mode === 'audio' && (!o.stt || !o.tts)) throw new Error('an audio-mode caller needs an STT and a TTS');

  const ws = await connect(url.toString(), o.apiKey, o.signal);
  const link: Link =
    o.mode === 'text'
      ? new TextLink(ws, o.signal)
      : new AudioLink(ws, { stt: o.stt!, tts: o.tts!, languages: o.languages.slice(0, 1), agentTurnEndMs: o.agentTurnEndMs ?? 900, ...(o.signal ? { signal: o.signal } : {}) });
  const transcript: TranscriptLine[] = [];
  let turns = 0;
  const ticker = setInterval(() => o.onTick?.({ turns }), 1000);
  const add = (line: TranscriptLine) => {
    transcript.push(line);
    o.onLine?.(line, transcript);
  };
  const deadline = Date.now() + o.maxDurationMs;
  const done = async (endedBy: EndedBy): Promise<ConversationResult> => {
    await link.hangUp();
    return { transcript, endedBy, turns };
  };
  /** the server closed the call: the agent hung up (1000), or the call failed */
  const closedBy = (): ConversationResult | never => {
    const c = link.closed!;
    if (c.code === 1000) return { transcript, endedBy: 'agent', turns };
    const why = link.lastError ?? (c.reason || `close code ${c.code}`);
    throw new ConversationError('call_failed', `the call ended with an error (WebSocket ${c.code}): ${why}`);
  };
  try {
    if (link instanceof AudioLink) {
      try {
        await link.start();
      } catch (err) {
        throw new ConversationError('caller_engine', `the caller's STT could not start: ${(err as Error).message}`, (err as { engineError?: { retryable?: boolean } }).engineError?.retryable ?? false);
      }
    }
    let heard = await link.listen(openerWaitMs, deadline);
    for (;;) {
      if (heard.kind === 'turn' && heard.text) add({ role: 'agent', text: heard.text, at: heard.at });
      if (heard.kind === 'closed' || link.closed) return closedBy();
      if (heard.kind === 'time') return done('time_limit');
      if (heard.kind === 'none' && turns > 0) {
        const why = link.lastError ? ` (the call reported: ${link.lastError})` : '';
        throw new ConversationError('agent_silent', `the agent did not answer: nothing was heard from it for ${Math.round(agentSilenceMs / 1000)} s after the caller's turn ${turns}${why}`);
      }
      if (turns >= o.maxTurns) return done('max_turns');
      turns++;
      let at = new Date().toISOString();
      let reply = await callerReply(o, transcript);
      // the agent went on talking while the caller thought (a pause inside its turn): the caller hears it out and
      // answers the whole turn instead (at most MAX_RETHINKS times)
      for (let again = 0; again < MAX_RETHINKS && link.agentSpokeSinceTurn() && !link.closed; again++) {
        const more = await link.listen(agentSilenceMs, deadline);
        if (more.kind === 'turn' && more.text) {
          const last = transcript[transcript.length - 1];
          if (last?.role === 'agent') {
            last.text = `${last.text} ${more.text}`;
            o.onLine?.(last, transcript);
          } else add({ role: 'agent', text: more.text, at: more.at });
        }
        if (more.kind === 'time') return done('time_limit');
        if (link.closed) return closedBy();
        at = new Date().toISOString();
        reply = await callerReply(o, transcript);
      }
      if (link.closed) return closedBy();
      await link.say(reply.text);
      add({ role: 'caller', text: reply.text, at });
      if (reply.hangUp) {
        // a moment for the agent's goodbye to start, then the line is put down
        await sleep(500);
        return done('caller');
      }
      if (Date.now() >= deadline) return done('time_limit');
      heard = await link.listen(agentSilenceMs, deadline);
    }
  } catch (err) {
    link.close();
    throw err;
  } finally {
    clearInterval(ticker);
    await link.release();
  }
}
