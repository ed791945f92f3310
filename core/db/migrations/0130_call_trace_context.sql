-- OpenTelemetry: the W3C trace context (traceparent, tracestate) of the request or activity that created the call,
-- so the media session of the call continues the same trace (core/tracing.ts). NULL when tracing is off.
ALTER TABLE calls ADD COLUMN IF NOT EXISTS trace_context jsonb;
