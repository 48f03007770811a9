import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  context,
  diag,
  DiagLogLevel,
  type Link,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import { getNumberFromEnv, getStringFromEnv, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import type { TracingConfig } from '../../config/shared/tracing-env.js';
import { orTimeout } from '../async/or-timeout.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { BoundedSpanProcessor, type DropReason } from './bounded-span-processor.js';

// Loaded only when tracing is on (a chunk of its own in the bundle). Spans are made by hand:
// instrumentation that patches `require` sees nothing in the bundle.
export { SpanKind };
export type { Context, DropReason, Span };

/** W3C trace context as it travels in headers, frames and `_meta`. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The exporter of each OTLP protocol; each reads its other OTEL_* variables itself. */
const EXPORTERS = {
  'http/json': JsonExporter,
  grpc: GrpcExporter,
  'http/protobuf': ProtobufExporter,
};

let sdk: NodeSDK | undefined;
let processor: BoundedSpanProcessor | undefined;
let tracer: Tracer = trace.getTracer('plant-store');

/** Starts the SDK; `dropped` counts spans dropped (too many waiting) or lost (failed export). */
export function start(
  config: TracingConfig,
  version: string,
  logger: Logger,
  dropped: (reason: DropReason, spans: number, error?: Error) => void,
): void {
  logDiagnostics(logger);
  const asked =
    getStringFromEnv('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ??
    getStringFromEnv('OTEL_EXPORTER_OTLP_PROTOCOL');
  // The SDK's own words, which it would say had it picked the exporter itself.
  if (asked !== undefined && asked !== config.protocol) {
    diag.warn(`Unsupported OTLP traces protocol: ${asked}. Using ${config.protocol}.`);
  }
  // The SDK's own reading of OTEL_BSP_*: our cap on spans held is the batch queue's size.
  const maxQueueSize = getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? 2048;
  processor = new BoundedSpanProcessor(
    (exporter) =>
      new BatchSpanProcessor({
        exporter,
        maxQueueSize,
        scheduledDelayMillis: getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY'),
        exportTimeoutMillis: getNumberFromEnv('OTEL_BSP_EXPORT_TIMEOUT'),
        maxExportBatchSize: getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
      }),
    new EXPORTERS[config.protocol](),
    maxQueueSize,
    dropped,
  );
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read by the SDK, win over these.
  const service = { 'service.name': config.defaultServiceName, 'service.version': version };
  sdk = new NodeSDK({
    resource: defaultResource().merge(resourceFromAttributes(service)),
    spanProcessors: [processor],
    // Trace context only: a client's W3C baggage is not passed on to MCP servers and webhooks.
    textMapPropagator: new W3CTraceContextPropagator(),
  });
  sdk.start();
  tracer = trace.getTracer('plant-store', version);
}

// The SDK's warnings (an OTEL_* value it does not know and ignores) as ours, one a minute past
// the first ten. It quotes an endpoint it cannot parse: endpoints and headers are cut out.
export function logDiagnostics(logger: Logger): void {
  const secrets = ['HEADERS', 'TRACES_HEADERS', 'ENDPOINT', 'TRACES_ENDPOINT']
    .map((name) => getStringFromEnv(`OTEL_EXPORTER_OTLP_${name}`))
    .filter((value) => value !== undefined);
  const log = new RateLimitedLog(logger, { ratePerSecond: 1 / 60, burst: 10 });
  const warn = (message: string) => {
    const redacted = secrets.reduce((m, s) => m.replaceAll(s, '[redacted]'), message);
    log.warn({}, `opentelemetry: ${redacted}`);
  };
  const ignore = () => undefined;
  const diagLogger = { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
  diag.setLogger(diagLogger, DiagLogLevel.WARN);
}

/** Sends what is queued for `timeoutMs` at most (not the exporter's 10 s); returns the unsent. */
export async function shutdown(timeoutMs: number): Promise<number> {
  const outcome = await orTimeout(Promise.resolve(sdk?.shutdown()), timeoutMs);
  return outcome === 'timeout' ? (processor?.pending ?? 0) : 0;
}

// An HTTP request's SERVER span, continuing its `traceparent`. The request's and response's
// events are bound to it too: a body read ends in a stream event, outside the caller's context.
export function serverSpan(
  request: IncomingMessage,
  response: ServerResponse,
  attributes: Attributes,
): { span: Span; run: (next: () => void) => void } {
  const parent = propagation.extract(context.active(), request.headers);
  const span = startSpan(request.method ?? 'HTTP', SpanKind.SERVER, attributes, parent);
  const active = trace.setSpan(parent, span);
  context.bind(active, request);
  context.bind(active, response);
  return { span, run: (next) => context.with(active, next) };
}

export function startSpan(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  parent: Context = context.active(),
  links?: Link[],
): Span {
  return tracer.startSpan(name, { kind, attributes, ...(links ? { links } : {}) }, parent);
}

/** A CLIENT span and the trace context to send with its request, so the peer continues it. */
export interface ClientSpan {
  carrier: TraceCarrier;
  /** Ends it, with `attributes` of the answer; failed with `error` (a short reason) when given. */
  end(error?: string, attributes?: Attributes): void;
}

/** A CLIENT span, child of the trace context `parent` carries (the active one without). */
export function startClientSpan(
  name: string,
  attributes: Attributes,
  parent?: TraceCarrier,
  links?: Link[],
): ClientSpan {
  const span = startSpan(name, SpanKind.CLIENT, attributes, contextFrom(parent), links);
  return {
    carrier: carrierOf(span),
    end(error, answer) {
      if (answer) span.setAttributes(answer);
      endSpan(span, error);
    },
  };
}

/** Ends `span`, marked failed with `error` (a short reason, never a secret) when given. */
export function endSpan(span: Span, error?: string): void {
  if (error !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.setAttribute('error.type', error);
  }
  span.end();
}

/** The trace context of `span` (the active one by default), to send along. */
export function carrierOf(span?: Span): TraceCarrier {
  const carrier: TraceCarrier = {};
  const ctx = span ? trace.setSpan(context.active(), span) : context.active();
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context a received trace context continues; the active one when it carries none. */
export function contextFrom(carrier: TraceCarrier | undefined): Context {
  return carrier ? propagation.extract(context.active(), carrier) : context.active();
}

/** The active context, to continue later (a queued write, a stored notice). */
export function activeContext(): Context {
  return context.active();
}

/** A link to the span of `ctx`, if it has one. */
export function linkTo(ctx: Context): Link | undefined {
  const spanContext = trace.getSpanContext(ctx);
  return spanContext ? { context: spanContext } : undefined;
}

/** trace_id and span_id of the active span, for the log line being written. */
export function logIds(): { trace_id: string; span_id: string } | Record<string, never> {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
