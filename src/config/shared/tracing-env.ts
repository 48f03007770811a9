import { z } from 'zod';

/**
 * OpenTelemetry tracing, configured by the standard OTEL_* variables: on when an OTLP endpoint
 * is set and OTEL_SDK_DISABLED is not true. The exporter reads its own OTEL_EXPORTER_OTLP_*
 * variables (headers, timeout, compression) as the OpenTelemetry specification says.
 */
export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

/** Tracing of one process; undefined in the config means off (nothing is loaded). */
export interface TracingConfig {
  serviceName: string;
  sampler: TracesSampler;
  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  samplerRatio: number;
  /** Finished spans are sent this often (OTEL_BSP_SCHEDULE_DELAY, ms). */
  exportDelayMs: number;
  /** Finished spans waiting to be sent, past which new ones are dropped (OTEL_BSP_MAX_QUEUE_SIZE). */
  maxQueueSize: number;
  /** How long the last export may hold the exit (TRACING_SHUTDOWN_TIMEOUT_SECONDS, ms). */
  shutdownTimeoutMs: number;
}

const unsetIfEmpty = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const httpUrl = (name: string) =>
  unsetIfEmpty(
    z
      .string()
      .refine(
        (v) => URL.canParse(v) && ['http:', 'https:'].includes(new URL(v).protocol),
        `${name} must be an http:// or https:// URL`,
      ),
  );

/** Only OTLP over HTTP with JSON bodies is built in. */
const protocol = (name: string) =>
  unsetIfEmpty(
    z.literal('http/json', { error: `${name} must be http/json (the one exporter built in)` }),
  );

/** The variables, to spread into an entry point's environment schema. */
export const tracingEnvShape = {
  OTEL_SDK_DISABLED: unsetIfEmpty(
    z
      .string()
      .transform((v) => v.trim().toLowerCase())
      .pipe(z.enum(['true', 'false'], { error: 'OTEL_SDK_DISABLED must be true or false' })),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol('OTEL_EXPORTER_OTLP_PROTOCOL'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'),
  OTEL_TRACES_EXPORTER: unsetIfEmpty(
    z.enum(['otlp', 'none'], { error: 'OTEL_TRACES_EXPORTER must be otlp or none' }),
  ),
  OTEL_SERVICE_NAME: unsetIfEmpty(z.string().trim().min(1)),
  OTEL_TRACES_SAMPLER: unsetIfEmpty(
    z.enum(TRACES_SAMPLERS, {
      error: `OTEL_TRACES_SAMPLER must be one of ${TRACES_SAMPLERS.join(', ')}`,
    }),
  ).default('parentbased_always_on'),
  OTEL_BSP_SCHEDULE_DELAY: unsetIfEmpty(
    z
      .string()
      .trim()
      .regex(/^\d{1,7}$/, 'OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds')
      .transform(Number),
  ).default(5000),
  // 2,048 spans of about 1 KiB: a couple of MiB at most while the collector is unreachable.
  OTEL_BSP_MAX_QUEUE_SIZE: unsetIfEmpty(
    z
      .string()
      .trim()
      .regex(/^[1-9]\d{0,5}$/, 'OTEL_BSP_MAX_QUEUE_SIZE must be a whole number from 1 to 999999')
      .transform(Number),
  ).default(2048),
  // Ours, not OpenTelemetry's: the exporter's own timeout (10 s) would hold SIGTERM that long.
  TRACING_SHUTDOWN_TIMEOUT_SECONDS: unsetIfEmpty(
    z
      .string()
      .trim()
      .regex(
        /^(\d|[1-5]\d|60)$/,
        'TRACING_SHUTDOWN_TIMEOUT_SECONDS must be a whole number of seconds from 0 to 60',
      )
      .transform(Number),
  ).default(2),
  OTEL_TRACES_SAMPLER_ARG: unsetIfEmpty(
    z
      .string()
      .trim()
      .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1')
      .transform(Number),
  ),
};

type TracingEnv = z.infer<z.ZodObject<typeof tracingEnvShape>>;

/** The tracing of a process named `defaultServiceName` unless OTEL_SERVICE_NAME says otherwise. */
export function tracingConfigOf(
  env: TracingEnv,
  defaultServiceName: string,
): TracingConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined || env.OTEL_SDK_DISABLED === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER === 'none') return undefined;
  return {
    serviceName: env.OTEL_SERVICE_NAME ?? defaultServiceName,
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG ?? 1,
    exportDelayMs: env.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
    shutdownTimeoutMs: env.TRACING_SHUTDOWN_TIMEOUT_SECONDS * 1000,
  };
}
