// CallSession: one call's life on this process. It owns the two pipelines (caller side: noise gate → VAD → STT →
// turn manager; agent side: chunker → TTS → pacer with the mixer), the conversation context, the timers (greeting,
// idle, max duration), the transcript, the recording and the per-turn metrics. Every agent utterance is a
// SpeechHandle, so barge-in, idle prompts, farewells and the duration cut all interrupt/await the same way.
import type { Logger } from '../../core/logger.ts';
import type { Engines, LlmChunk, LlmService, LlmUsage, ToolCall } from '../services/types.ts';
import type { Frame } from '../pipeline/frames.ts';
import { Collector, Pipeline, type Processor } from '../pipeline/processor.ts';
import { NoiseGateStage, SttStage, VadStage, type AsyncDenoiser, type Denoiser, type Vad } from '../pipeline/input-stages.ts';
import { TurnManager } from '../pipeline/turn/manager.ts';
import { turnPolicyFor, type TurnPolicyStage } from '../pipeline/turn/policy.ts';
import { SentenceChunker } from '../pipeline/chunker.ts';
import { TtsStage } from '../pipeline/tts-stage.ts';
import { Pacer } from '../pipeline/pacer.ts';
import { Mixer } from '../pipeline/mixer.ts';
import { sharedClock, type FrameClock } from '../pipeline/clock.ts';
import { backgroundSource, createWordPicker, taskSoundSource } from '../sounds/index.ts';
import { MemorySink, Recorder, type RecordingSink } from '../pipeline/recorder.ts';
import { ConversationContext, type AssistantMsg } from '../pipeline/context.ts';
import { interruptionsTotal, observeTurn, summarizeTurn, type TurnLatency, type TurnTimes } from '../pipeline/metrics.ts';
import { SpeechHandle, type SpeechSource } from './speech.ts';
import { FalseInterruptionGuard } from './false-interruption.ts';
import { DEFAULT_IDLE_MESSAGE, wordList, type CallConfig } from './config.ts';
import type { ToolSet, ToolStatus } from '../tools/runtime.ts';
import { recordingLabel, type Spoken } from '../tools/spoken.ts';
import { substitute } from '../../core/agent-config/snapshot.ts';
import { DTMF_PAUSE_MS, dtmfTones } from '../audio/dtmf.ts';

export type EndedReason =
  | 'user_hangup'
  | 'agent_hangup'
  | 'silence_timeout'
  | 'max_duration'
  | 'voicemail'
  | 'transferred'
  | 'pipeline_error'
  | 'cancelled'
  | 'unknown';

import type { LiveTransport, Transport, TransportEvent } from '../transports/types.ts';
import { timed } from '../stage-cpu.ts';
import { withLlmRetries } from '../services/llm/retry.ts';
export type { Transport } from '../transports/types.ts';

export type TranscriptEntry =
  | { role: 'user'; content: string; timestamp: string }
  | { role: 'assistant'; content: string; timestamp: string; interrupted?: boolean }
  | { role: 'tool'; name: string; status: ToolStatus; durationMs: number; t_ms: number; timestamp: string };

/** A key the caller pressed on a phone call: kept on the call's `logs.dtmf` (the transcript has only the spec's roles). */
export interface DtmfPress {
  digit: string;
  t_ms: number;
  timestamp: string;
}
/** Keys the agent pressed (sendDtmf): kept on the call's `logs.dtmf_sent`. */
export interface KeysSent {
  digits: string;
  via: 'in-band' | 'carrier';
  t_ms: number;
  timestamp: string;
}
/** Keys typed within this pause of each other are one entry for the LLM; `#` ends an entry at once. */
export const DTMF_ENTRY_PAUSE_MS = 1500;

/** Collaborators that watch a call (answer supervision, …) without living inside the session. */
export interface SessionObserver {
  /** the pipeline is running */
  started?(session: CallSession): void;
  /** caller audio as it arrives (16 kHz mono), before the noise gate */
  callerAudio?(pcm16k: Int16Array): void;
  /** VAD: the caller started (true) / stopped (false) speaking */
  userSpeech?(speaking: boolean): void;
  /** a completed caller turn (final transcript) */
  userTurn?(text: string): void;
  ended?(reason: EndedReason): void;
}

export interface Usage {
  llm?: { provider: string; model: string; prompt_tokens: number; completion_tokens: number; cache_read_tokens?: number; cache_creation_tokens?: number };
  tts?: { provider: string; model: string; characters: number };
  stt?: { provider: string; model: string; seconds: number };
}

export interface SessionResult {
  reason: EndedReason;
  error: string | null;
  transcript: TranscriptEntry[];
  usage: Usage;
  latency: TurnLatency[];
  recording: Recorder;
  /** wall time of the session's t0: the recording's first sample and t_ms 0 of tool/dtmf entries (logs.timeline_started_at) */
  timelineStartedAt?: string;
  /** keypad presses, in order (logs.dtmf) */
  dtmf: DtmfPress[];
  /** keys the agent pressed, in order (logs.dtmf_sent) */
  keysSent?: KeysSent[];
}

export interface SessionOptions {
  callId: string;
  config: CallConfig;
  /** system prompt with every placeholder resolved */
  systemPrompt: string;
  engines: Engines;
  vad: Vad;
  denoiser: Denoiser | AsyncDenoiser | null;
  tools: ToolSet;
  transport: Transport;
  logger: Logger;
  clock?: FrameClock;
  /** Where the recording's blocks go as the call runs (the runner: a spool file); default in memory. */
  recordingSink?: RecordingSink;
  /** STT: VAD stop → wait this long for a trailing final (ms) */
  trailingFinalMs?: number;
  finalTimeoutMs?: number;
  /**
   * Hold-music watchdog: caller "speech" (VAD) that has produced no transcript for this long is not a turn; the
   * caller counts as silent again, so idle prompts and finally silence_timeout apply. Default 30 s.
   */
  holdMusicMs?: number;
  observers?: SessionObserver[];
  /** the call's context variables (built-ins included): what resolve() substitutes */
  contextVariables?: Record<string, string>;
  /** called once when the session has ended (row writes, webhooks, closing the transport) */
  onEnd(result: SessionResult): Promise<void>;
}

const MAX_TOOL_ROUNDS = 6;

/** LLM chunks of a speculative request, replayable once it is adopted (buffered, then live). */
class ChunkTape {
  private readonly chunks: LlmChunk[] = [];
  private done = false;
  private error: unknown = null;
  private wake: (() => void) | null = null;
  push(c: LlmChunk): void {
    this.chunks.push(c);
    this.wake?.();
  }
  finish(err: unknown = null): void {
    this.done = true;
    this.error = err;
    this.wake?.();
  }
  async *replay(): AsyncIterable<LlmChunk> {
    for (let i = 0; ; i++) {
      while (i >= this.chunks.length && !this.done) await new Promise<void>((r) => (this.wake = r));
      if (i < this.chunks.length) yield this.chunks[i]!;
      else if (this.error) throw this.error;
      else return;
    }
  }
}

export class CallSession {
  readonly ctx: ConversationContext;
  readonly transcript: TranscriptEntry[] = [];
  private readonly dtmf: DtmfPress[] = [];
  private readonly keysSent: KeysSent[] = [];
  private keypad = '';
  private keypadTimer: NodeJS.Timeout | null = null;
  readonly latency: TurnLatency[] = [];
  readonly recorder: Recorder;
  private readonly clock: FrameClock;
  private readonly t0: number;
  /** wall-clock time (ms since epoch) of t0 = the recording's first sample: stored turn latencies carry wall times */
  private readonly t0Wall: number;
  private readonly log: Logger;
  private readonly cfg: CallConfig;
  private readonly input: Pipeline;
  private readonly output: Pipeline;
  private readonly stt: SttStage;
  /** the turn model's policy (an STT without its own end of turn, with a turn model): null for VAD silence alone */
  private readonly turnPolicy: TurnPolicyStage | null;
  private readonly pacer: Pacer;
  private readonly mixer: Mixer;
  private readonly speeches = new Set<SpeechHandle>();
  /** barge-in on caller sound holds the agent's utterances until a word proves it an interruption */
  private readonly hold: FalseInterruptionGuard;
  private readonly entries = new Map<SpeechHandle, Extract<TranscriptEntry, { role: 'assistant' }>>();
  private readonly owners = new Map<SpeechHandle, AssistantMsg[]>();
  private readonly turns = new Map<SpeechHandle, TurnTimes>();
  private reply: SpeechHandle | null = null;
  private pendingTurn: TurnTimes | null = null;
  private turnCount = 0;
  private userSpeaking = false;
  private greeted = false;
  private replyAfterSpeech = false;
  private ending = false;
  private ended = false;
  private idleRetries = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private idleTimer: NodeJS.Timeout | null = null;
  private ackTimer: NodeJS.Timeout | null = null;
  private readonly ackAssets = new Map<string, Int16Array>();
  private readonly fillerAssets = new Map<string, Int16Array>();
  private readonly ackPicker: { next(): string | null };
  private readonly fillerPicker: { next(): string | null };
  private readonly llmUsage = { prompt: 0, completion: 0, cacheRead: 0, cacheCreation: 0, seen: false };
  private ttsChars = 0;
  private activeTools = 0;
  private taskTimer: NodeJS.Timeout | null = null;
  private speculation: { text: string; abort: AbortController; tape: ChunkTape; requestAt: number } | null = null;
  private lastWordsAt = 0;
  private watchdog: NodeJS.Timeout | null = null;
  /** VAD keeps reporting speech that the watchdog decided is not speech (music, noise) */
  private ignoringSpeech = false;
  /** the callee is a phone menu (holdTurns): caller turns are joined until it pauses this long; no idle prompts */
  private menuPauseMs: number | null = null;
  private heldTurn: { text: string; turn: TurnTimes; timer: NodeJS.Timeout | null } | null = null;
  /** tool calls still running, with their kind (a transfer whose carrier moved the call before answering) */
  private readonly toolsInFlight = new Map<Extract<TranscriptEntry, { role: 'tool' }>, string>();
  /** the TTS engine's early connect(): its failure, if any */
  private readonly ttsConnect: Promise<unknown>;
  /** the call's LLM; a request the vendor refuses for a moment is sent again before the turn is lost (llm/retry.ts) */
  private readonly llm: LlmService;

  constructor(private readonly o: SessionOptions) {
    this.cfg = o.config;
    this.llm = withLlmRetries(o.engines.llm);
    this.clock = o.clock ?? sharedClock;
    this.t0 = this.clock.now();
    this.t0Wall = Date.now();
    this.log = o.logger.child({ callId: o.callId });
    this.ctx = new ConversationContext(o.systemPrompt);
    this.recorder = new Recorder(this.t0, o.recordingSink ?? new MemorySink());
    this.mixer = new Mixer(480);
    const order = (o: string) => (o === 'random' ? 'random' : 'round-robin') as 'random' | 'round-robin';
    this.ackPicker = createWordPicker({ ...o.config.acknowledgeSounds, wordOrder: order(o.config.acknowledgeSounds.wordOrder) });
    this.fillerPicker = createWordPicker({ ...o.config.fillerWords, wordOrder: order(o.config.fillerWords.wordOrder) });
    const onError = (err: unknown, where: string) => this.onStageError(err, where);
    this.hold = new FalseInterruptionGuard({
      pause: (s) => this.pacer.pause(s),
      resume: (s) => this.pacer.resume(s),
      cut: (s) => this.cut(s, 'user'),
      after: (ms, fn) => this.after(ms, fn),
      onResumed: (held) => this.log.info({ utterances: held.length }, 'caller sound without words: the agent plays on'),
    });

    this.stt = new SttStage();
    this.turnPolicy = turnPolicyFor(o.engines, () => this.clock.now(), this.log);
    const inputStages: Processor[] = [];
    if (o.denoiser) inputStages.push(new NoiseGateStage(o.denoiser));
    inputStages.push(
      new VadStage(o.vad),
      ...(this.turnPolicy ? [this.turnPolicy] : []),
      this.stt,
      new TurnManager({
        sttTurnDetection: o.engines.stt.hasTurnDetection,
        trailingFinalMs: o.trailingFinalMs ?? 250,
        finalTimeoutMs: o.finalTimeoutMs ?? o.engines.stt.finalWaitMs ?? 1500,
      }),
      new Collector((f) => this.onInput(f)),
    );
    this.input = new Pipeline(inputStages, onError);

    // per-stage CPU label (media/stage-cpu.ts) only: live transports name their kind, the session does not use it
    const outStage = `pipeline: agent audio out (${(o.transport as Partial<LiveTransport>).kind ?? 'other'})`;
    this.pacer = new Pacer({
      clock: this.clock,
      mixer: this.mixer,
      // carriers confirm playout with marks: truncation of interrupted replies then follows what was really heard
      ...(o.transport.playedMs ? { playedMs: () => o.transport.playedMs!() } : {}),
      send: (pcm, at) => {
        if (this.ended) return;
        timed(outStage, () => {
          this.recorder.addAgent(pcm, at);
          this.o.transport.sendAudio(pcm);
        });
      },
      onSpeechStart: (s, now) => this.onSpeechStart(s, now),
      onChunkStart: (s, i) => {
        const text = s.chunks[i]?.text;
        if (text) this.o.transport.sendEvent({ type: 'rtf-bot-text', payload: { text } });
      },
    });
    const tts = new TtsStage(o.engines.tts, {
      onTextSent: (s) => {
        const t = this.turns.get(s);
        if (t && t.ttsTextAt === undefined) t.ttsTextAt = this.clock.now();
      },
      onFirstByte: (s) => {
        const t = this.turns.get(s);
        if (t && t.ttsFirstByteAt === undefined) t.ttsFirstByteAt = this.clock.now();
      },
      onCharacters: (n) => (this.ttsChars += n),
    });
    this.output = new Pipeline([new SentenceChunker(), tts, this.pacer], onError);
    this.ttsConnect = tts.connectFailure;
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────────────────────────────────
  async start(): Promise<void> {
    const cfg = this.cfg;
    // the recogniser opens while the greeting already starts (caller audio reaches the session only once start()
    // has resolved, so nothing is lost); a failure to open still fails the start
    const opening = this.o.engines.stt.open({
      languages: cfg.languages,
      keyterms: sttKeyterms(cfg),
      onEvent: (ev) => {
        if (!this.ended) this.stt.onEvent(ev);
      },
    });
    opening.catch(() => {}); // handled by the await below
    // the turn model loads beside it (shared by the process's calls: normally loaded already); VAD-only without it
    const turning = this.turnPolicy?.activate(this.o.vad, this.log);
    this.startOutput(cfg);
    const stream = await opening;
    await turning;
    this.clock.poll(); // see media/session/runner.ts: a burst of calls starting together
    if (this.ended) {
      void stream.close().catch(() => {}); // the call ended while the recogniser was opening
      return;
    }
    this.stt.attach(stream);
  }

  private startOutput(cfg: CallConfig): void {
    this.pacer.start();
    // a refusal found by the TTS engine's early connect ends the call now, not when the agent first speaks
    void this.ttsConnect.then((err) => {
      if (err && !this.ended && (err as { engineError?: { fatal: boolean } }).engineError?.fatal) this.onStageError(err, 'tts');
    });
    if (cfg.llm.prewarm && this.o.engines.llm.prewarm) {
      this.o.engines.llm.prewarm().catch((err: unknown) => this.log.debug({ err }, 'llm prewarm failed'));
    }
    this.prefillLlm();
    if (cfg.backgroundSound.enabled) {
      try {
        this.mixer.setBackground(backgroundSource(cfg.backgroundSound));
      } catch (err) {
        this.log.warn({ err }, 'background sound unavailable');
      }
    }
    if (cfg.acknowledgeSounds.enabled) void this.prepareWords(wordList(cfg.acknowledgeSounds.words), this.ackAssets);
    if (cfg.fillerWords.enabled) void this.prepareWords(wordList(cfg.fillerWords.words), this.fillerAssets);
    this.after(cfg.maxCallDurationS * 1000, () => void this.end('max_duration'));
    if (cfg.greeting.speakFirst === 'agent') {
      this.after(cfg.greeting.agentDelayS * 1000, () => this.greet());
    } else {
      this.after(cfg.greeting.userTimeoutS * 1000, () => {
        if (!this.userSpeaking) this.greet();
      });
    }
    for (const ob of this.o.observers ?? []) ob.started?.(this);
  }

  /**
   * Out-of-band events of the transport. DTMF keys go on the call's logs (`logs.dtmf`, never a transcript role) and
   * reach the LLM as user text: the keys typed in one go (until `#` or a DTMF_ENTRY_PAUSE_MS pause) are one caller
   * turn `[keypad: 1234#]`, answered like speech.
   */
  noteEvent(ev: TransportEvent): void {
    if (this.ended) return;
    if (ev.type === 'dtmf') {
      const t_ms = Math.round(this.clock.now() - this.t0);
      this.dtmf.push({ digit: ev.digit, t_ms, timestamp: new Date().toISOString() });
      this.log.info({ digit: ev.digit, t_ms }, 'dtmf');
      this.keypad += ev.digit;
      if (this.keypadTimer) clearTimeout(this.keypadTimer);
      this.keypadTimer = null;
      if (ev.digit === '#') this.flushKeypad();
      else this.keypadTimer = this.after(DTMF_ENTRY_PAUSE_MS, () => this.flushKeypad());
    }
  }

  private flushKeypad(): void {
    this.keypadTimer = null;
    const keys = this.keypad;
    this.keypad = '';
    if (keys) this.onUserTurn(`[keypad: ${keys}]`, true);
  }

  /** Caller audio from the transport: 16 kHz mono s16le. */
  pushAudio(pcm: Int16Array): void {
    if (this.ended) return;
    this.clock.poll(); // a tick that is due runs now, not after this whole burst of socket reads (clock.ts)
    this.recorder.addCaller(pcm, this.clock.now());
    for (const ob of this.o.observers ?? []) ob.callerAudio?.(pcm);
    this.input.push({ type: 'audioIn', pcm });
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** `{{variables}}` of a text resolved with the call's context variables (as the system prompt was). */
  resolve(text: string): string {
    return substitute(text, this.o.contextVariables ?? {});
  }

  /**
   * A collaborator takes the call over to finish it (voicemail drop): every utterance stops now (the far end drops
   * what it buffered), and the agent no longer greets, answers turns or prompts; say() and playAudio() still speak.
   * The caller's words still reach the transcript.
   */
  windUp(): void {
    if (this.ended || this.ending) return;
    this.ending = true;
    this.clearIdle();
    this.dropSpeculation();
    this.discardHeldTurn();
    let cut = false;
    for (const s of [...this.speeches]) {
      if (s.state === 'speaking') cut = true;
      this.cut(s, 'agent');
    }
    if (cut) this.o.transport.clearAudio?.();
  }

  /**
   * The callee is a phone menu or hold line (pauseMs), or a person again (null). While it is a menu, caller turns
   * are joined into one until the menu pauses for pauseMs (a menu reads its options as several sentences), and the
   * idle prompts wait: silence on hold is expected, maxCallDurationS still ends the call.
   */
  holdTurns(pauseMs: number | null): void {
    this.menuPauseMs = pauseMs;
    if (pauseMs === null) {
      const held = this.heldTurn;
      if (held?.timer) clearTimeout(held.timer);
      if (held) {
        this.heldTurn = null;
        this.answerTurn(held.text, held.turn);
      }
      this.maybeArmIdle();
    } else this.clearIdle();
  }

  /**
   * Press keys on the line (sendDtmf): through `carrier` (its DTMF API; `w` pauses between its requests) when given,
   * else — or when the carrier refuses — as in-band tones played like speech (media/audio/dtmf.ts). Either way the
   * transcript gets `[keypad: …]` as the agent's and logs.dtmf_sent the keys. Resolves once they are sent.
   */
  async pressKeys(digits: string, carrier: ((keys: string) => Promise<void>) | null): Promise<'in-band' | 'carrier'> {
    if (this.ended) throw new Error('the call has ended');
    const label = `[keypad: ${digits}]`;
    const t_ms = Math.round(this.clock.now() - this.t0);
    let via: 'in-band' | 'carrier' = 'in-band';
    if (carrier) {
      try {
        const groups = digits.split(/(w+)/).filter(Boolean);
        for (const g of groups) {
          if (g.startsWith('w')) await new Promise((r) => setTimeout(r, g.length * DTMF_PAUSE_MS));
          else await carrier(g);
        }
        via = 'carrier';
        this.transcript.push({ role: 'assistant', content: label, timestamp: new Date().toISOString() });
      } catch (err) {
        this.log.warn({ err }, 'the carrier could not send the keys: sending them as tones');
      }
    }
    if (via === 'in-band') await this.playAudio(label, dtmfTones(digits, 24000), 'keypad').done;
    this.keysSent.push({ digits, via, t_ms, timestamp: new Date().toISOString() });
    this.log.info({ digits, via }, 'keys pressed');
    return via;
  }

  /** Stored audio as one utterance, not interruptible, not in the LLM's context; the transcript shows `label`. */
  playAudio(label: string, pcm: Int16Array, source: SpeechSource): SpeechHandle {
    const s = new SpeechHandle(source, false);
    this.track(s);
    this.output.push({ type: 'speakAudio', label, pcm, speech: s });
    return s;
  }

  /** End the call (idempotent). */
  async end(reason: EndedReason, error: string | null = null): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.ending = true;
    for (const ob of this.o.observers ?? []) ob.ended?.(reason);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.clearIdle();
    this.clearAck();
    this.dropSpeculation();
    this.hold.close();
    if (this.taskTimer) clearTimeout(this.taskTimer);
    for (const s of [...this.speeches]) {
      if (s.state === 'speaking') interruptionsTotal.inc({ by: 'agent' });
      this.cut(s, 'agent');
    }
    this.pacer.close();
    this.clock.poll(); // see media/session/runner.ts: a burst of calls ending together
    await Promise.allSettled([this.input.close(), this.output.close(), this.o.engines.tts.close?.(), this.o.engines.llm.close?.()]);
    this.clock.poll();
    this.ctx.prune();
    // The carrier moved the call (its stream stopped) before answering the transfer request: that transfer succeeded.
    if (reason === 'transferred') for (const [entry, kind] of this.toolsInFlight) if (kind === 'transferCall') entry.status = 'success';
    const usage: Usage = {};
    const { llm, stt, tts } = this.o.engines;
    if (this.llmUsage.seen) {
      usage.llm = { provider: llm.provider, model: llm.model, prompt_tokens: this.llmUsage.prompt, completion_tokens: this.llmUsage.completion };
      if (this.llmUsage.cacheRead) usage.llm.cache_read_tokens = this.llmUsage.cacheRead;
      if (this.llmUsage.cacheCreation) usage.llm.cache_creation_tokens = this.llmUsage.cacheCreation;
    }
    if (this.ttsChars > 0) usage.tts = { provider: tts.provider, model: tts.model, characters: this.ttsChars };
    // A service that emitted no metrics is absent (spec "usage"): STT counts only once caller audio reached it.
    if (this.stt.samples > 0) usage.stt = { provider: stt.provider, model: stt.model, seconds: Math.round((this.stt.samples / 16000) * 100) / 100 };
    const transcript = this.transcript.filter((e) => e.role !== 'assistant' || e.content.trim());
    try {
      await this.o.onEnd({ reason, error, transcript, usage, latency: this.latency, recording: this.recorder, timelineStartedAt: new Date(this.t0Wall).toISOString(), dtmf: this.dtmf, keysSent: this.keysSent });
    } catch (err) {
      this.log.error({ err }, 'call end handling failed');
    }
  }

  /** Release everything without ending the call (it never started: the caller handles the row). */
  async abandon(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    void this.recorder.discard();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.pacer.close();
    await Promise.allSettled([this.input.close(), this.output.close(), this.o.engines.tts.close?.(), this.o.engines.llm.close?.()]);
  }

  /** An unhandled failure after connect: tell the client, end with pipeline_error. */
  fail(err: unknown): void {
    if (this.ended) return;
    const message = err instanceof Error ? err.message : String(err);
    this.log.error({ err }, 'pipeline error');
    this.o.transport.sendEvent({ type: 'error', message: `Pipeline error: ${message}` });
    void this.end('pipeline_error', message);
  }

  private onStageError(err: unknown, where: string): void {
    const engineError = (err as { engineError?: { fatal: boolean; message: string } }).engineError;
    if (engineError && !engineError.fatal) {
      this.log.warn({ where, err }, 'engine error');
      this.o.transport.sendEvent({ type: 'error', message: engineError.message });
      return;
    }
    this.fail(err);
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.ended) return;
      try {
        fn();
      } catch (err) {
        this.fail(err);
      }
    }, Math.max(0, ms));
    this.timers.add(t);
    return t;
  }

  // ── caller side ───────────────────────────────────────────────────────────────────────────────────────
  private onInput(f: Frame): void {
    if (this.ended) return;
    switch (f.type) {
      case 'userStartedSpeaking':
        if (this.userSpeaking || this.ignoringSpeech) return;
        this.userSpeaking = true;
        // a VAD stop from before this speech is not this turn's (an STT with its own end of turn often ends the
        // turn before the VAD's stop window closes): the turn's latency must not start from it
        this.pendingTurn = null;
        for (const ob of this.o.observers ?? []) ob.userSpeech?.(true);
        this.lastWordsAt = this.clock.now();
        this.armWatchdog();
        if (this.heldTurn?.timer) {
          clearTimeout(this.heldTurn.timer); // the menu goes on: its next sentence joins the held turn
          this.heldTurn.timer = null;
        }
        this.idleRetries = 0;
        this.clearIdle();
        if (this.cfg.stt.interruptionMinWords === 0) this.holdForWords();
        this.armAck();
        return;
      case 'userPaused':
        this.hold.quiet();
        return;
      case 'userResumed':
        this.hold.sound();
        return;
      case 'userStoppedSpeaking':
        if (this.ignoringSpeech) {
          this.ignoringSpeech = false;
          return;
        }
        this.userSpeaking = false;
        this.hold.quiet();
        for (const ob of this.o.observers ?? []) ob.userSpeech?.(false);
        this.clearWatchdog();
        this.clearAck();
        // with a turn model the speech ended when the VAD heard it end; the model ended the turn heldMs later
        this.pendingTurn = f.turnModel
          ? { turn: this.turnCount + 1, userStoppedAt: this.clock.now() - f.turnModel.heldMs, turnEndAt: this.clock.now() }
          : { turn: this.turnCount + 1, userStoppedAt: this.clock.now() };
        return;
      case 'transcript': {
        this.lastWordsAt = this.clock.now();
        if (this.ignoringSpeech) {
          // words after all: it is the caller
          this.ignoringSpeech = false;
          this.userSpeaking = true;
          this.clearIdle();
          this.armWatchdog();
        }
        this.o.transport.sendEvent({ type: 'rtf-user-transcription', payload: { text: f.text, final: f.final } });
        if (this.hold.holding && countWords(f.text) > 0 && this.hold.words()) interruptionsTotal.inc({ by: 'user' });
        const n = this.cfg.stt.interruptionMinWords;
        if (n > 0 && countWords(f.text) >= n) this.bargeIn();
        return;
      }
      case 'turnEnd':
        this.onUserTurn(f.text);
        return;
      case 'eagerTurnEnd':
        this.speculate(f.text);
        return;
      case 'turnResumed':
        this.dropSpeculation();
        return;
      case 'error':
        this.log.warn({ message: f.message, fatal: f.fatal }, 'stt error');
        this.o.transport.sendEvent({ type: 'error', message: f.message });
        if (f.fatal) void this.end('pipeline_error', f.message);
        return;
      default:
        return;
    }
  }

  /**
   * Caller sound over the agent (interruptionMinWords 0): it stops at once, but its utterances are held, not cut,
   * until a word is transcribed (false-interruption.ts).
   */
  private holdForWords(): void {
    const held = [...this.speeches].filter((s) => s.interruptible && !s.finished);
    if (this.hold.hold(held)) this.o.transport.clearAudio?.();
  }

  /** Caller speech over the agent: stop every interruptible utterance (and the reply being generated). */
  private bargeIn(): boolean {
    let cut = false;
    for (const s of [...this.speeches]) {
      if (!s.interruptible || s.finished) continue;
      if (s.state === 'speaking') cut = true;
      this.cut(s, 'user');
    }
    if (cut) {
      interruptionsTotal.inc({ by: 'user' });
      this.o.transport.clearAudio?.();
    }
    return cut;
  }

  /** Interrupt one utterance and rewrite the context/transcript to what was actually heard. */
  private cut(s: SpeechHandle, by: 'user' | 'agent'): void {
    if (s.finished) return;
    s.interrupt();
    this.output.push({ type: 'interrupt', by });
  }

  /** Eager end of turn: send the LLM request now, keep its output until the turn really ends with the same text. */
  private speculate(text: string): void {
    this.dropSpeculation();
    if (this.ending || !text.trim()) return;
    if ([...this.speeches].some((s) => !s.finished && (!s.interruptible || this.cfg.stt.interruptionMinWords > 0))) return;
    const abort = new AbortController();
    const tape = new ChunkTape();
    const messages = [...this.ctx.forLlm(), { role: 'user' as const, content: text }];
    this.speculation = { text: text.trim(), abort, tape, requestAt: this.clock.now() };
    void (async () => {
      try {
        for await (const c of this.llm.stream({
          messages,
          tools: this.o.tools.specs,
          temperature: this.cfg.llm.temperature,
          maxTokens: this.cfg.llm.maxTokens,
          signal: abort.signal,
        })) {
          tape.push(c);
        }
        tape.finish();
      } catch (err) {
        tape.finish(err);
      }
    })();
  }

  private dropSpeculation(): void {
    this.speculation?.abort.abort();
    this.speculation = null;
  }

  /** A completed caller turn: speech (final transcript), or keys typed on the keypad (logs.dtmf, not the transcript). */
  private onUserTurn(text: string, keypad = false): void {
    const now = this.clock.now();
    if (!keypad) {
      this.transcript.push({ role: 'user', content: text, timestamp: new Date().toISOString() });
      for (const ob of this.o.observers ?? []) ob.userTurn?.(text);
    }
    if (this.ending) return;
    const turn = this.pendingTurn ?? { turn: this.turnCount + 1 };
    this.pendingTurn = null;
    turn.sttFinalAt = now;
    if (this.menuPauseMs !== null && !keypad) {
      // a phone menu: this sentence is held until the menu pauses (holdTurns)
      const held = (this.heldTurn ??= { text: '', turn, timer: null });
      held.text = held.text ? `${held.text} ${text}` : text;
      held.turn.sttFinalAt = now;
      if (held.timer) clearTimeout(held.timer);
      held.timer = this.after(this.menuPauseMs, () => {
        if (this.heldTurn !== held || this.userSpeaking) return;
        this.heldTurn = null;
        this.answerTurn(held.text, held.turn);
      });
      return;
    }
    this.answerTurn(text, turn);
  }

  private discardHeldTurn(): void {
    if (this.heldTurn?.timer) clearTimeout(this.heldTurn.timer);
    this.heldTurn = null;
  }

  /** Reply to a caller turn (or keep it for after an utterance that cannot be interrupted). */
  private answerTurn(text: string, turn: TurnTimes): void {
    if (this.ending) return;
    const busy = [...this.speeches].filter((s) => !s.finished);
    if (busy.some((s) => !s.interruptible)) {
      // the agent is saying something that cannot be interrupted (opener, farewell): answer right after it
      this.ctx.addUser(text);
      this.replyAfterSpeech = true;
      return;
    }
    if (this.cfg.stt.interruptionMinWords > 0 && busy.some((s) => s.state === 'speaking')) {
      // fewer words than interruptionMinWords while the agent talks: a backchannel ("mhm"), not a turn
      return;
    }
    for (const s of busy) this.cut(s, 'user');
    this.ctx.addUser(text);
    this.greeted = true;
    const spec = this.speculation;
    this.speculation = null;
    if (spec && spec.text === text.trim()) {
      turn.llmRequestAt = spec.requestAt;
      this.startReply('reply', true, turn, spec);
    } else {
      spec?.abort.abort();
      this.startReply('reply', true, turn);
    }
  }

  // ── agent side ────────────────────────────────────────────────────────────────────────────────────────
  private greet(): void {
    if (this.greeted || this.ending) return;
    this.greeted = true;
    const g = this.cfg.greeting;
    const msgs = g.firstMessages.filter((m) => m.trim());
    if (msgs.length) {
      this.say(msgs[Math.floor(Math.random() * msgs.length)]!, 'greeting', g.interruptible);
      this.prefillLlm(); // the greeting is in the context now: the first reply's prompt starts with it
    } else this.startReply('greeting', g.interruptible, null);
  }

  /** llm.prewarm: the in-process model evaluates the conversation so far (vendors: nothing). */
  private prefillLlm(): void {
    if (!this.cfg.llm.prewarm || !this.o.engines.llm.prefill) return;
    this.o.engines.llm.prefill({ messages: this.ctx.forLlm(), tools: this.o.tools.specs }).catch((err: unknown) => this.log.debug({ err }, 'llm prefill failed'));
  }

  /** Speak a fixed text as one utterance (kept in the context as the assistant's words). */
  say(text: string, source: SpeechSource, interruptible: boolean, inContext = true): SpeechHandle {
    const s = new SpeechHandle(source, interruptible);
    this.track(s);
    if (inContext) {
      const msg = this.ctx.addAssistant(text);
      this.owners.set(s, [msg]);
      s.textOwner = msg;
    }
    this.output.push({ type: 'speakNow', text, speech: s });
    return s;
  }

  /**
   * Say what a tool says: a text through TTS (say), or a stored recording played through the same pacer as speech
   * (so every transport gets it at its own rate, the call's recording has it, the transcript shows `[audio: name]`).
   * A recording that cannot be played says its fallback (or nothing: null). Resolves once it is queued.
   */
  async speak(msg: Spoken, source: SpeechSource, interruptible: boolean, inContext = true): Promise<SpeechHandle | null> {
    if (msg.kind === 'text') return this.say(msg.text, source, interruptible, inContext);
    const audio = await msg.audio; // loaded since the call started: normally already here
    if (this.ended) return null;
    if (!audio || audio.pcm.length === 0) {
      this.log.warn({ recordingId: msg.recordingId }, 'audio recording unavailable: not played');
      return msg.fallback ? this.say(msg.fallback, source, interruptible, inContext) : null;
    }
    const label = recordingLabel(audio.name);
    const s = new SpeechHandle(source, interruptible);
    this.track(s);
    if (inContext) {
      const m = this.ctx.addAssistant(label);
      this.owners.set(s, [m]);
      s.textOwner = m;
    }
    this.output.push({ type: 'speakAudio', label, pcm: audio.pcm, speech: s });
    return s;
  }

  private track(s: SpeechHandle): void {
    this.speeches.add(s);
    this.clearIdle();
    const entry = { role: 'assistant' as const, content: '', timestamp: new Date().toISOString() };
    this.entries.set(s, entry);
    this.transcript.push(entry);
    s.onFinish((state) => this.onSpeechFinished(s, state));
  }

  private onSpeechStart(s: SpeechHandle, now: number): void {
    const entry = this.entries.get(s);
    if (entry) entry.timestamp = new Date().toISOString();
    const t = this.turns.get(s);
    if (t && t.firstFrameAt === undefined) {
      t.firstFrameAt = now;
      const e = this.o.engines;
      const providers = { stt: e.stt.provider, llm: e.llm.provider, tts: e.tts.provider, ...(this.turnPolicy?.active ? { turn_model: e.turn!.id } : {}) };
      const l = summarizeTurn(t, { t0: this.t0, t0Wall: this.t0Wall, providers });
      this.latency.push(l);
      observeTurn(l);
    }
  }

  private onSpeechFinished(s: SpeechHandle, state: 'played' | 'interrupted'): void {
    this.speeches.delete(s);
    // context + transcript get exactly what the caller heard
    const heard = state === 'played' ? s.fullText() : s.playedText();
    const entry = this.entries.get(s);
    if (entry) {
      entry.content = heard;
      if (state === 'interrupted') entry.interrupted = true;
    }
    for (const msg of this.owners.get(s) ?? []) {
      if (state === 'interrupted') msg.content = s.playedText(msg);
    }
    this.entries.delete(s);
    this.owners.delete(s);
    this.turns.delete(s);
    if (this.ended) return;
    if (this.replyAfterSpeech && ![...this.speeches].some((x) => !x.interruptible)) {
      this.replyAfterSpeech = false;
      this.startReply('reply', true, null);
      return;
    }
    this.maybeArmIdle();
  }

  private startReply(
    source: SpeechSource,
    interruptible: boolean,
    turn: TurnTimes | null,
    spec: { abort: AbortController; tape: ChunkTape } | null = null,
  ): void {
    const s = new SpeechHandle(source, interruptible);
    if (spec) s.abort.signal.addEventListener('abort', () => spec.abort.abort(), { once: true });
    this.track(s);
    this.owners.set(s, []);
    if (turn) {
      this.turnCount = turn.turn;
      this.turns.set(s, turn);
    }
    this.reply = s;
    this.runLlm(s, spec?.tape ?? null).catch((err: unknown) => {
      if (s.finished || this.ended) return; // interrupted: the abort surfaced as an error
      const engineError = (err as { engineError?: { fatal: boolean; message: string } }).engineError;
      if (engineError && !engineError.fatal) {
        this.log.warn({ err }, 'llm error');
        this.o.transport.sendEvent({ type: 'error', message: engineError.message });
        this.output.push({ type: 'flush', speech: s });
        return;
      }
      this.fail(err);
    });
  }

  private async runLlm(s: SpeechHandle, prefetched: ChunkTape | null = null): Promise<void> {
    const { llm } = this;
    const turn = this.turns.get(s);
    for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
      const msg = this.ctx.addAssistant();
      this.owners.get(s)?.push(msg);
      s.textOwner = msg;
      const calls: ToolCall[] = [];
      let first = true;
      const requestAt = this.clock.now();
      if (turn && turn.llmRequestAt === undefined) turn.llmRequestAt = requestAt;
      const filler = round === 0 && this.cfg.fillerWords.enabled ? this.armFiller(s) : null;
      try {
        const source =
          round === 0 && prefetched
            ? prefetched.replay() // the speculative request started at the eager end of turn
            : llm.stream({
                messages: this.ctx.forLlm(),
                tools: this.o.tools.specs,
                temperature: this.cfg.llm.temperature,
                maxTokens: this.cfg.llm.maxTokens,
                signal: s.abort.signal,
              });
        for await (const chunk of source) {
          if (s.finished || this.ended) return;
          if (chunk.type === 'text') {
            if (first) {
              first = false;
              if (turn && turn.llmFirstTokenAt === undefined) turn.llmFirstTokenAt = this.clock.now();
            }
            msg.content += chunk.delta;
            this.output.push({ type: 'llmText', delta: chunk.delta, speech: s });
          } else if (chunk.type === 'tool_call') {
            calls.push(chunk.call);
          } else if (chunk.type === 'usage') {
            this.addUsage(chunk.usage);
          }
        }
      } finally {
        if (filler) clearTimeout(filler);
      }
      if (s.finished || this.ended) return;
      if (!calls.length) break;
      msg.toolCalls = calls;
      const results = await this.runTools(calls, s);
      if (s.finished || this.ended) return;
      const ending = results.find((r) => r.farewell !== undefined);
      if (ending?.farewell !== undefined) {
        this.output.push({ type: 'flush', speech: s });
        await this.hangUp(ending.farewell, s, ending.reason);
        return;
      }
    }
    this.output.push({ type: 'flush', speech: s });
    if (this.reply === s) this.reply = null;
  }

  private async runTools(calls: ToolCall[], s: SpeechHandle): Promise<Array<{ farewell?: Spoken | null; reason?: EndedReason }>> {
    this.activeTools++;
    this.startTaskSound();
    try {
      return await Promise.all(
        calls.map(async (call) => {
          const tool = this.o.tools.get(call.name);
          const startedAt = this.clock.now();
          const entry: Extract<TranscriptEntry, { role: 'tool' }> = {
            role: 'tool',
            name: call.name,
            status: 'failed',
            durationMs: 0,
            t_ms: Math.round(startedAt - this.t0),
            timestamp: new Date().toISOString(),
          };
          this.transcript.push(entry);
          let content: string;
          let farewell: Spoken | null | undefined;
          let reason: EndedReason | undefined;
          if (!tool) {
            content = `Unknown tool '${call.name}'.`;
          } else {
            let args: Record<string, unknown> = {};
            let bad = false;
            try {
              const parsed: unknown = call.arguments.trim() ? JSON.parse(call.arguments) : {};
              if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
              else bad = true;
            } catch {
              bad = true;
            }
            if (bad) {
              content = 'The tool arguments were not a valid JSON object.';
            } else {
              const message = this.o.tools.pickMessage(tool);
              // a transfer's message is said in full before the caller is moved
              const spoken = message && !this.ending ? await this.speak(message, 'tool_message', tool.kind !== 'transferCall', false) : null;
              this.toolsInFlight.set(entry, tool.kind);
              const r = await tool.run(args, s.abort.signal, { spoken: spoken ? spoken.done.then(() => undefined) : Promise.resolve() }).finally(() => this.toolsInFlight.delete(entry));
              entry.status = r.status;
              content = r.content;
              farewell = r.endCall?.farewell;
              reason = r.endCall?.reason;
            }
          }
          entry.durationMs = Math.round(this.clock.now() - startedAt);
          this.ctx.addToolResult(call.id, call.name, content);
          return farewell !== undefined ? { farewell, ...(reason ? { reason } : {}) } : {};
        }),
      );
    } finally {
      this.activeTools--;
      if (this.activeTools === 0) this.stopTaskSound();
    }
  }

  /** endCall: let the current reply play out, say the farewell (not interruptible), then hang up (after a transfer: end). */
  private async hangUp(farewell: Spoken | null, reply: SpeechHandle, reason: EndedReason = 'agent_hangup'): Promise<void> {
    this.ending = true;
    this.clearIdle();
    await reply.done;
    if (this.ended) return;
    if (farewell) {
      const bye = await this.speak(farewell, 'farewell', false);
      await bye?.done;
    }
    await this.end(reason);
  }

  private addUsage(u: LlmUsage): void {
    this.llmUsage.seen = true;
    this.llmUsage.prompt += u.promptTokens;
    this.llmUsage.completion += u.completionTokens;
    this.llmUsage.cacheRead += u.cacheReadTokens ?? 0;
    this.llmUsage.cacheCreation += u.cacheCreationTokens ?? 0;
  }

  // ── hold-music watchdog ───────────────────────────────────────────────────────────────────────────────
  private armWatchdog(): void {
    this.clearWatchdog();
    const limit = this.o.holdMusicMs ?? 30_000;
    const check = () => {
      this.watchdog = null;
      if (!this.userSpeaking) return;
      const quietFor = this.clock.now() - this.lastWordsAt;
      if (quietFor >= limit) {
        this.log.info({ ms: Math.round(quietFor) }, 'caller audio without words: treated as silence (hold music / noise)');
        this.userSpeaking = false;
        this.ignoringSpeech = true;
        this.clearAck();
        this.maybeArmIdle();
        return;
      }
      this.watchdog = this.after(limit - quietFor, check);
    };
    this.watchdog = this.after(limit, check);
  }

  private clearWatchdog(): void {
    if (this.watchdog) {
      clearTimeout(this.watchdog);
      this.timers.delete(this.watchdog);
      this.watchdog = null;
    }
  }

  // ── idle ──────────────────────────────────────────────────────────────────────────────────────────────
  private maybeArmIdle(): void {
    if (this.ending || this.userSpeaking || !this.greeted || this.menuPauseMs !== null) return;
    if ([...this.speeches].some((s) => !s.finished)) return;
    this.clearIdle();
    this.idleTimer = this.after(this.cfg.userIdleTimeoutS * 1000, () => this.onIdle());
  }

  private clearIdle(): void {
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.timers.delete(this.idleTimer);
      this.idleTimer = null;
    }
  }

  private onIdle(): void {
    this.idleTimer = null;
    if (this.userSpeaking || this.ending) return;
    this.idleRetries++;
    if (this.idleRetries > this.cfg.userIdleMaxRetries) {
      void this.end('silence_timeout');
      return;
    }
    const msgs = this.cfg.userIdleMessages.filter((m) => m.trim());
    this.say(msgs[this.idleRetries - 1] ?? DEFAULT_IDLE_MESSAGE, 'idle', true);
  }

  // ── sounds ────────────────────────────────────────────────────────────────────────────────────────────
  /** Synthesize each word once per call with the call's TTS (counted in TTS usage). */
  private async prepareWords(words: string[], into: Map<string, Int16Array>): Promise<void> {
    for (const w of words) {
      const parts: Int16Array[] = [];
      try {
        for await (const pcm of this.o.engines.tts.synthesize(w, new AbortController().signal)) parts.push(pcm);
      } catch (err) {
        this.log.warn({ err, word: w }, 'could not synthesize sound word');
        continue;
      }
      this.ttsChars += w.length;
      const buf = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
      parts.reduce((off, p) => (buf.set(p, off), off + p.length), 0);
      into.set(w, buf);
    }
  }

  private armAck(): void {
    const a = this.cfg.acknowledgeSounds;
    if (!a.enabled) return;
    this.clearAck();
    this.ackTimer = this.after(a.thresholdS * 1000, () => {
      this.ackTimer = null;
      if (!this.userSpeaking || [...this.speeches].some((s) => s.state === 'speaking')) return;
      const word = this.ackPicker.next(); // null: skipped this time (probability)
      const pcm = word ? this.ackAssets.get(word) : undefined;
      if (pcm) this.mixer.overlay(pcm, a.volume);
    });
  }

  private clearAck(): void {
    if (this.ackTimer) {
      clearTimeout(this.ackTimer);
      this.timers.delete(this.ackTimer);
      this.ackTimer = null;
    }
  }

  /** A filler word when the LLM's first token is late (thresholdMs), with probability. */
  private armFiller(s: SpeechHandle): NodeJS.Timeout {
    const f = this.cfg.fillerWords;
    return this.after(f.thresholdMs, () => {
      if (s.finished || s.chunks.length > 0) return;
      const word = this.fillerPicker.next();
      const pcm = word ? this.fillerAssets.get(word) : undefined;
      if (pcm) this.mixer.overlay(pcm, 1);
    });
  }

  private startTaskSound(): void {
    const t = this.cfg.taskSound;
    if (!t.enabled || this.taskTimer) return;
    this.taskTimer = setTimeout(() => {
      this.taskTimer = null;
      if (this.activeTools === 0 || this.ended) return;
      try {
        this.mixer.setTask(taskSoundSource(t));
      } catch (err) {
        this.log.warn({ err }, 'task sound unavailable');
      }
    }, t.startAfterMs);
  }

  private stopTaskSound(): void {
    if (this.taskTimer) clearTimeout(this.taskTimer);
    this.taskTimer = null;
    this.mixer.setTask(null);
  }
}

function countWords(text: string): number {
  return text.trim().split(/\s+/).filter(Boolean).length;
}

function sttKeyterms(cfg: CallConfig): string[] {
  const block = (cfg.stt as Record<string, unknown>)[cfg.stt.provider];
  if (!block || typeof block !== 'object') return [];
  const b = block as Record<string, unknown>;
  const raw = typeof b.keyterms === 'string' ? b.keyterms : typeof b.contextTerms === 'string' ? b.contextTerms : '';
  return wordList(raw);
}
