import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import type { TracingConfig } from '../../config/shared/tracing-env.js';
import type * as Otel from './otel.js';

/** The OpenTelemetry helpers of ./otel.ts. */
export type Tracing = typeof Otel;

/** The helpers once the SDK runs, with what the shutdown needs. */
let loaded: { otel: Tracing; shutdownTimeoutMs: number; logger: Logger } | undefined;

/** The tracing helpers, or undefined when off: then a request pays one comparison. */
export function tracing(): Tracing | undefined {
  return loaded?.otel;
}

/** Loads and starts the SDK when `config` is set (the OTEL_* variables turn it on). */
export async function startTracing(
  config: TracingConfig | undefined,
  version: string,
  logger: Logger,
): Promise<void> {
  if (!config || loaded) return;
  const otel = await import('./otel.js');
  // In prom-client's default registry, which /metrics serves; only while tracing is on.
  const dropped = new Counter({
    name: 'otel_spans_dropped_total',
    help: 'Finished spans that never reached the collector: queue_full (OTEL_BSP_MAX_QUEUE_SIZE were waiting to be sent) or export_failed (the collector refused the export, or it failed or timed out)',
    labelNames: ['reason'],
  });
  const reasons: Record<Otel.DropReason, string> = {
    queue_full:
      'tracing: dropped spans, too many wait to be sent (OTEL_BSP_MAX_QUEUE_SIZE); is the collector reachable?',
    export_failed: 'tracing: an export failed, its spans are lost; is the collector reachable?',
  };
  // One line a minute at most per reason: a collector that is down loses spans continuously.
  const perMinute = () => new RateLimitedLog(logger, { ratePerSecond: 1 / 60, burst: 1 });
  const logs = { queue_full: perMinute(), export_failed: perMinute() };
  for (const reason of Object.keys(reasons)) dropped.inc({ reason }, 0);
  otel.start(config, version, logger, (reason, spans, error) => {
    dropped.inc({ reason }, spans);
    logs[reason].warn(
      { reason, spans, ...(error ? { error: error.message } : {}) },
      reasons[reason],
    );
  });
  // Where spans go, said once: a wrong endpoint shows here, a dead one in export_failed lines.
  logger.info({ protocol: config.protocol, endpoint: config.endpoint }, 'tracing on');
  loaded = { otel, shutdownTimeoutMs: config.shutdownTimeoutMs, logger };
}

/** Sends the spans still queued, for TRACING_SHUTDOWN_TIMEOUT_SECONDS at most; at shutdown. */
export async function stopTracing(): Promise<void> {
  if (!loaded) return;
  const { otel, shutdownTimeoutMs: timeoutMs, logger } = loaded;
  const unsent = await otel.shutdown(timeoutMs);
  if (unsent > 0) {
    logger.warn(
      { spans: unsent, timeoutSeconds: timeoutMs / 1000 },
      'tracing: spans not sent at shutdown, the collector did not answer within TRACING_SHUTDOWN_TIMEOUT_SECONDS',
    );
  }
}
