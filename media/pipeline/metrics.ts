// Per-turn latency, measured inside the pipeline: caller stopped speaking → STT final → LLM request sent →
// LLM first token → first text to TTS → TTS first byte → first audio frame out. Kept on the call's logs and as
// Prometheus histograms in the process registry; interruptions are counted by side.
import { prom, registry } from '../../core/metrics.ts';

const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

export const turnStageSeconds = new prom.Histogram({
  name: 'voice_turn_stage_seconds',
  help: 'Per-turn latency of each pipeline stage (stt: stop→final, llm: request→first token, tts: text→first byte, total: stop→first frame out, overhead: total minus vendor time)',
  labelNames: ['stage'] as const,
  buckets,
  registers: [registry],
});

export const interruptionsTotal = new prom.Counter({
  name: 'voice_interruptions_total',
  help: 'Agent utterances cut short, by who interrupted (user: barge-in, agent: end of call / limits)',
  labelNames: ['by'] as const,
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
  sttFinalAt?: number;
  llmRequestAt?: number;
  llmFirstTokenAt?: number;
  ttsTextAt?: number;
  ttsFirstByteAt?: number;
  firstFrameAt?: number;
}

export interface TurnLatency {
  turn: number;
  stt_ms: number | null;
  llm_ms: number | null;
  tts_ms: number | null;
  total_ms: number | null;
  overhead_ms: number | null;
  detail: Record<string, number>;
}

const d = (a?: number, b?: number) => (a !== undefined && b !== undefined ? Math.round((b - a) * 10) / 10 : null);

export function summarizeTurn(t: TurnTimes): TurnLatency {
  const origin = t.userStoppedAt ?? t.sttFinalAt ?? t.llmRequestAt;
  const stt = d(t.userStoppedAt, t.sttFinalAt);
  const llm = d(t.llmRequestAt, t.llmFirstTokenAt);
  const tts = d(t.ttsTextAt, t.ttsFirstByteAt);
  const total = d(origin, t.firstFrameAt);
  const overhead = total !== null ? Math.round((total - (stt ?? 0) - (llm ?? 0) - (tts ?? 0)) * 10) / 10 : null;
  const detail: Record<string, number> = {};
  for (const k of ['sttFinalAt', 'llmRequestAt', 'llmFirstTokenAt', 'ttsTextAt', 'ttsFirstByteAt', 'firstFrameAt'] as const) {
    const v = d(origin, t[k]);
    if (v !== null) detail[k.replace(/At$/, '_ms')] = v;
  }
  return { turn: t.turn, stt_ms: stt, llm_ms: llm, tts_ms: tts, total_ms: total, overhead_ms: overhead, detail };
}

export function observeTurn(l: TurnLatency): void {
  if (l.stt_ms !== null) turnStageSeconds.observe({ stage: 'stt' }, l.stt_ms / 1000);
  if (l.llm_ms !== null) turnStageSeconds.observe({ stage: 'llm' }, l.llm_ms / 1000);
  if (l.tts_ms !== null) turnStageSeconds.observe({ stage: 'tts' }, l.tts_ms / 1000);
  if (l.total_ms !== null) turnStageSeconds.observe({ stage: 'total' }, l.total_ms / 1000);
  if (l.overhead_ms !== null) turnStageSeconds.observe({ stage: 'overhead' }, Math.max(0, l.overhead_ms) / 1000);
}
