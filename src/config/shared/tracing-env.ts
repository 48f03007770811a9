import { z } from 'zod';
import { unsetIfEmpty, wholeNumberSettings } from './env-fields.js';

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

const text = unsetIfEmpty(z.string().trim());

/** `otlp, none` as the SDK splits it: trimmed, without `null` and repeats. */
function exporterList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((name) => name.trim());
  return [...new Set(names.filter((name) => name !== '' && name !== 'null'))];
}

const EXPORTER_MESSAGE = 'OTEL_TRACES_EXPORTER must be otlp or none (spans go over OTLP)';

export const tracingEnvShape = {
  OTEL_SDK_DISABLED: text,
  // A list, as the SDK reads it; its other exporters (console, zipkin) are not in the image.
  OTEL_TRACES_EXPORTER: text.transform(exporterList).pipe(
    z
      .array(z.string())
      .refine((names) => names.every((name) => name === 'otlp' || name === 'none'), {
        message: EXPORTER_MESSAGE,
      })
      .optional(),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: text,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: text,
  OTEL_EXPORTER_OTLP_PROTOCOL: text,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: text,
  // Ours, not OpenTelemetry's: the exporter's own timeout (10 s) would hold SIGTERM that long.
  ...wholeNumberSettings({
    TRACING_SHUTDOWN_TIMEOUT_SECONDS: [
      0,
      60,
      2,
      'At shutdown, the longest wait in seconds for the last export of spans',
    ],
  }),
};

type TracingEnv = z.infer<z.ZodObject<typeof tracingEnvShape>>;

/**
 * Tracing is on when an OTLP endpoint is set and OTEL_SDK_DISABLED is not true. The SDK reads
 * every other OTEL_* variable itself; these decide whether to load it and say where spans go.
 */
export type TracingConfig = NonNullable<ReturnType<typeof tracingConfigOf>>;

/** The tracing of a process named `defaultServiceName`, or undefined when tracing is off. */
export function tracingConfigOf(env: TracingEnv, defaultServiceName: string) {
  const signalEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const endpoint = signalEndpoint ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined || env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return undefined;
  // As the SDK: a list that starts with `none` turns tracing off.
  if (env.OTEL_TRACES_EXPORTER?.[0] === 'none') return undefined;
  const asked = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  // As the SDK does, an unknown protocol falls back to http/protobuf: the start line shows it.
  const protocol = OTLP_PROTOCOLS.find((known) => known === asked) ?? 'http/protobuf';
  // Over HTTP the general endpoint gets the signal's path; the traces endpoint is used as is.
  const path = signalEndpoint === undefined && protocol !== 'grpc' ? 'v1/traces' : '';
  return {
    // service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
    defaultServiceName,
    protocol,
    endpoint: loggable(endpoint, path),
    shutdownTimeoutMs: env.TRACING_SHUTDOWN_TIMEOUT_SECONDS * 1000,
  };
}

/** The URL without user, password or query (OTLP endpoints may carry tokens in either). */
function loggable(endpoint: string, path: string): string {
  if (!URL.canParse(endpoint)) return 'not a URL';
  const url = new URL(endpoint);
  if (path) url.pathname = `${url.pathname.replace(/\/$/, '')}/${path}`;
  return `${url.protocol}//${url.host}${url.pathname}`;
}
