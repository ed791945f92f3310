// The media session of a call as OpenTelemetry spans (only when tracing is on, core/tracing.ts): `call.session`
// continues the trace stored on the call row (the api request or dial activity that created the call) and spans
// the live call; each agent reply that reached the caller becomes a `call.turn` span with its `turn_model` (when a
// turn model ended the turn), `stt`, `llm` and `tts` stage spans, placed from the turn timings the session stores
// in logs.latency (so the trace, the histogram and GET /calls/{callId} show the same numbers).
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { contextFromCarrier, tracer, tracingEnabled } from '../../core/tracing.ts';
import type { TurnLatency } from '../pipeline/metrics.ts';
import type { SessionResult } from './call-session.ts';

export function startSessionSpan(row: { id: string; transport: string; trace_context?: unknown }, transportKind: string): Span | null {
  if (!tracingEnabled()) return null;
  return tracer().startSpan('call.session', {
    kind: SpanKind.SERVER,
    attributes: { 'call.id': row.id, 'call.transport': row.transport, 'call.transport_kind': transportKind },
  }, contextFromCarrier(row.trace_context));
}

function turnSpans(session: Span, l: TurnLatency): void {
  if (!l.started_at || l.total_ms === null) return;
  const origin = Date.parse(l.started_at);
  const at = (ms: number) => new Date(origin + ms);
  const t = tracer();
  const turn = t.startSpan('call.turn', {
    startTime: at(0),
    attributes: {
      'turn.number': l.turn, 'turn.origin': l.origin ?? 'unknown', 'turn.total_ms': l.total_ms,
      ...(l.overhead_ms !== null ? { 'turn.overhead_ms': l.overhead_ms } : {}),
      'stt.provider': l.providers.stt, 'llm.provider': l.providers.llm, 'tts.provider': l.providers.tts,
    },
  }, trace.setSpan(context.active(), session));
  const d = l.detail;
  const stage = (name: 'turn_model' | 'stt' | 'llm' | 'tts', from?: number, to?: number) => {
    if (from === undefined || to === undefined) return;
    t.startSpan(name, { startTime: at(from), attributes: { provider: l.providers[name] ?? 'unknown', 'duration_ms': Math.round((to - from) * 10) / 10 } }, trace.setSpan(context.active(), turn)).end(at(to));
  };
  stage('turn_model', d.userStopped_ms, d.turnEnd_ms);
  stage('stt', d.turnEnd_ms ?? d.userStopped_ms, d.sttFinal_ms);
  stage('llm', d.llmRequest_ms, d.llmFirstToken_ms);
  stage('tts', d.ttsText_ms, d.ttsFirstByte_ms);
  turn.end(at(l.total_ms));
}

/** End the session span: one span per turn, the end reason, an error status for pipeline errors. */
export function endSessionSpan(span: Span | null, result: Pick<SessionResult, 'reason' | 'error' | 'latency'> | { error: string }): void {
  if (!span) return;
  if ('latency' in result) {
    for (const l of result.latency) turnSpans(span, l);
    span.setAttribute('call.ended_reason', result.reason);
    span.setAttribute('call.turns', result.latency.length);
  }
  if (result.error) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
  span.end();
}
