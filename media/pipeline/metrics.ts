// Per-turn latency, measured inside the pipeline: caller stopped speaking → STT final → LLM request sent →
// LLM first token → first text to TTS → TTS first byte → first audio frame out. Kept on the call's logs and as
// Prometheus histograms in the process registry; interruptions are counted by side.
import { prom, registry } from '../../core/metrics.ts';

const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

export const turnStageSeconds = new prom.Histogram({
  name: 'voice_turn_stage_seconds',
  help: 'Per-turn latency of each pipeline stage (turn_model: end of speech→the turn model ended the turn, stt: end of turn→final, llm: request→first token, tts: text→first byte, total: stop→first frame out, overhead: total minus vendor and turn-model time); provider: the stage\'s provider (turn_model: the model; total/overhead: stt+llm+tts providers)',
  labelNames: ['stage', 'provider'] as const,
  buckets,
  registers: [registry],
});

export const interruptionsTotal = new prom.Counter({
  name: 'voice_interruptions_total',
  help: 'Agent utterances cut short, by who interrupted (user: barge-in, agent: end of call / limits)',
  labelNames: ['by'] as const,
  registers: [registry],
});

export const falseInterruptionsTotal = new prom.Counter({
  name: 'voice_false_interruptions_total',
  help: 'Agent utterances stopped by caller sound that brought no word (a cough, a door, "mm") and then played on from the unheard part',
  registers: [registry],
});

export const pacerUnderrunsTotal = new prom.Counter({
  name: 'voice_pacer_underruns_total',
  help: 'Gaps inside an agent utterance: its audio ran out before the next audio of the same utterance arrived (the TTS fell behind playout), counted when the audio resumed',
  registers: [registry],
});

export const activeCallsGauge = new prom.Gauge({
  name: 'voice_active_calls',
  help: 'Live calls on this media process',
  registers: [registry],
});

export interface TurnTimes {
  turn: number;
  userStoppedAt?: number;
  /** the turn model ended the turn (absent without one: the end of speech is the end of the turn) */
  turnEndAt?: number;
  sttFinalAt?: number;
  llmRequestAt?: number;
  llmFirstTokenAt?: number;
  ttsTextAt?: number;
  ttsFirstByteAt?: number;
  firstFrameAt?: number;
}

/** The provider of each stage of a turn (the call's engines). */
export interface TurnProviders {
  stt: string;
  llm: string;
  tts: string;
  /** the turn model that ended the turn, when one did */
  turn_model?: string;
}

/**
 * One turn as stored in the call's `logs.latency[]` (documented in OpenAPI as TurnLatency). The first fields keep
 * their shape for existing readers; `origin`, `offset_ms`, `started_at` and `providers` place the turn on the call's
 * timeline and attribute it to its vendors.
 */
export interface TurnLatency {
  turn: number;
  /** end of speech → the turn model ended the turn (null without a turn model) */
  turn_model_ms: number | null;
  stt_ms: number | null;
  llm_ms: number | null;
  tts_ms: number | null;
  total_ms: number | null;
  overhead_ms: number | null;
  /** ms from the origin to each stage event that happened (userStopped_ms is 0 when the origin is the end of speech) */
  detail: Record<string, number>;
  /** which event the detail offsets count from: the caller's end of speech, else the STT final, else the LLM request */
  origin: 'user_stopped' | 'stt_final' | 'llm_request' | null;
  /** the origin, in ms since the call's session started (the recording's time axis) */
  offset_ms: number | null;
  /** the origin as a wall-clock time (ISO 8601) */
  started_at: string | null;
  providers: TurnProviders;
}

/** Where the turn's clock readings sit in the call: the session's start on the same clock, and its wall time. */
export interface TurnBase {
  t0: number;
  t0Wall: number;
  providers: TurnProviders;
}

const d = (a?: number, b?: number) => (a !== undefined && b !== undefined ? Math.round((b - a) * 10) / 10 : null);

export function summarizeTurn(t: TurnTimes, base: TurnBase): TurnLatency {
  const origin = t.userStoppedAt ?? t.sttFinalAt ?? t.llmRequestAt;
  const originName = t.userStoppedAt !== undefined ? 'user_stopped' : t.sttFinalAt !== undefined ? 'stt_final' : t.llmRequestAt !== undefined ? 'llm_request' : null;
  const turnModel = d(t.userStoppedAt, t.turnEndAt);
  const stt = d(t.turnEndAt ?? t.userStoppedAt, t.sttFinalAt);
  const llm = d(t.llmRequestAt, t.llmFirstTokenAt);
  const tts = d(t.ttsTextAt, t.ttsFirstByteAt);
  const total = d(origin, t.firstFrameAt);
  const overhead = total !== null ? Math.round((total - (turnModel ?? 0) - (stt ?? 0) - (llm ?? 0) - (tts ?? 0)) * 10) / 10 : null;
  const detail: Record<string, number> = {};
  for (const k of ['userStoppedAt', 'turnEndAt', 'sttFinalAt', 'llmRequestAt', 'llmFirstTokenAt', 'ttsTextAt', 'ttsFirstByteAt', 'firstFrameAt'] as const) {
    const v = d(origin, t[k]);
    if (v !== null) detail[k.replace(/At$/, '_ms')] = v;
  }
  return {
    turn: t.turn, turn_model_ms: turnModel, stt_ms: stt, llm_ms: llm, tts_ms: tts, total_ms: total, overhead_ms: overhead, detail,
    origin: originName,
    offset_ms: d(base.t0, origin),
    started_at: origin !== undefined ? new Date(base.t0Wall + (origin - base.t0)).toISOString() : null,
    providers: { stt: base.providers.stt, llm: base.providers.llm, tts: base.providers.tts, ...(turnModel !== null && base.providers.turn_model ? { turn_model: base.providers.turn_model } : {}) },
  };
}

/** The `provider` label of the whole-turn stages (total, overhead): the three stage providers. */
export const pipelineProvider = (p: TurnProviders) => `${p.stt}+${p.llm}+${p.tts}`;

export function observeTurn(l: TurnLatency): void {
  const p = l.providers;
  const all = pipelineProvider(p);
  if (l.turn_model_ms != null) turnStageSeconds.observe({ stage: 'turn_model', provider: p.turn_model ?? 'unknown' }, l.turn_model_ms / 1000);
  if (l.stt_ms !== null) turnStageSeconds.observe({ stage: 'stt', provider: p.stt }, l.stt_ms / 1000);
  if (l.llm_ms !== null) turnStageSeconds.observe({ stage: 'llm', provider: p.llm }, l.llm_ms / 1000);
  if (l.tts_ms !== null) turnStageSeconds.observe({ stage: 'tts', provider: p.tts }, l.tts_ms / 1000);
  if (l.total_ms !== null) turnStageSeconds.observe({ stage: 'total', provider: all }, l.total_ms / 1000);
  if (l.overhead_ms !== null) turnStageSeconds.observe({ stage: 'overhead', provider: all }, Math.max(0, l.overhead_ms) / 1000);
}
