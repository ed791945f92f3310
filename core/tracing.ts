// OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (no default endpoint: nothing is loaded,
// recorded or sent otherwise). When on, each process exports its spans over OTLP/HTTP (protobuf) to
// `${OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`, and one call is one trace: the api request span (caller's W3C
// traceparent honoured) → calls.trace_context (written by insertCall) → media's `call.session` span with a
// `call.turn` span per agent reply and its stt / llm / tts stage spans (from logs.latency) → the post-call
// signal-with-start's workflow headers → workflow and activity spans. Campaign calls hang under the dial activity.
// Only @opentelemetry/api (a no-op until a provider is registered) is imported statically; the SDK, the exporter
// and Temporal's interceptors are imported when tracing is switched on.
import { createRequire } from 'node:module';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Resource } from '@opentelemetry/resources';

interface TracingState {
  processor: SpanProcessor;
  resource: Resource;
  shutdown(): Promise<void>;
}

let state: TracingState | null = null;
let starting: Promise<void> | null = null;

export function tracingEnabled(): boolean {
  return state !== null;
}

/**
 * Switch tracing on for this process when an endpoint is given (the config's OTEL_EXPORTER_OTLP_ENDPOINT); a no-op
 * otherwise. Call once, before the Temporal client/worker are created (they add their interceptors when on).
 */
export async function initTracing(opts: { endpoint?: string | undefined; serviceName: string }): Promise<void> {
  if (!opts.endpoint || state) return;
  starting ??= (async () => {
    const [{ BasicTracerProvider, BatchSpanProcessor }, { Resource }, { W3CTraceContextPropagator }, { AsyncLocalStorageContextManager }, { OTLPTraceExporter }] = await Promise.all([
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/core'),
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/exporter-trace-otlp-proto'),
    ]);
    const exporter = new OTLPTraceExporter({ url: `${opts.endpoint!.replace(/\/+$/, '')}/v1/traces` });
    const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 });
    const resource = new Resource({ 'service.name': opts.serviceName });
    const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
    provider.register({ contextManager: new AsyncLocalStorageContextManager().enable(), propagator: new W3CTraceContextPropagator() });
    state = { processor, resource, shutdown: () => provider.shutdown() };
  })();
  await starting;
}

/** Send what is buffered (tests; shutdown). */
export async function flushTracing(): Promise<void> {
  await state?.processor.forceFlush();
}

export async function shutdownTracing(): Promise<void> {
  await state?.shutdown();
}

export function tracer(): Tracer {
  return trace.getTracer('voice-agent-service');
}

/** W3C trace context (traceparent, tracestate) of the active span, to store with work that continues elsewhere. */
export function activeTraceCarrier(): Record<string, string> | null {
  if (!state) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : null;
}

/** The context a stored carrier continues (the root context when there is none or it is malformed). */
export function contextFromCarrier(carrier: unknown): Context {
  if (!carrier || typeof carrier !== 'object') return context.active();
  const c: Record<string, string> = {};
  for (const [k, v] of Object.entries(carrier)) if (typeof v === 'string') c[k] = v;
  return propagation.extract(context.active(), c);
}

/** Run fn with span as the active span (its async continuations included). */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

const require = createRequire(import.meta.url);

/** Temporal client interceptors: the active context goes into the headers of workflows started/signalled. */
export async function temporalClientInterceptors() {
  if (!state) return {};
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry');
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/**
 * Temporal worker options: workflow spans (inside the sandbox, exported through a sink) and activity spans, both
 * continuing the context in the workflow headers; workflow → activity calls carry it on.
 */
export async function temporalWorkerTracing() {
  if (!state) return {};
  const otel = await import('@temporalio/interceptors-opentelemetry');
  return {
    interceptors: {
      workflowModules: [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
      activity: [
        (ctx: ConstructorParameters<typeof otel.OpenTelemetryActivityInboundInterceptor>[0]) => ({
          inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: { exporter: otel.makeWorkflowExporter(state.processor, state.resource) },
  };
}

/**
 * An incoming HTTP request as a SERVER span (the caller's traceparent header honoured), active while fn runs.
 * done() names it after the matched route and records the status. Without tracing fn just runs.
 */
export async function traceRequest<T>(
  req: { method: string; path: string; headers: Record<string, string | string[] | undefined> },
  fn: () => Promise<T>,
  done: () => { route: string | null; status: number },
): Promise<T> {
  if (!state) return fn();
  const parent = propagation.extract(context.active(), req.headers);
  const span = tracer().startSpan(`${req.method} ${req.path}`, {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': req.method, 'url.path': req.path },
  }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), fn);
  } catch (err) {
    span.recordException(err as Error);
    throw err;
  } finally {
    const { route, status } = done();
    if (route) {
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}
