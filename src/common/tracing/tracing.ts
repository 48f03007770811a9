import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import type { TracingConfig } from '../../config/shared/tracing-env.js';
import type * as Otel from './otel.js';

/** The OpenTelemetry helpers of ./otel.ts. */
export type Tracing = typeof Otel;

let loaded: Tracing | undefined;

/**
 * The tracing helpers, or undefined when tracing is off. Every seam asks this first: with
 * tracing off a request pays one comparison, and the SDK is never loaded.
 */
export function tracing(): Tracing | undefined {
  return loaded;
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
    help: 'Finished spans dropped because OTEL_BSP_MAX_QUEUE_SIZE were waiting to be sent',
  });
  // One line a minute at most: a collector that is down drops spans continuously.
  const log = new RateLimitedLog(logger, { ratePerSecond: 1 / 60, burst: 1 });
  otel.start(config, version, () => {
    dropped.inc();
    log.warn(
      { maxQueueSize: config.maxQueueSize },
      'tracing: dropped a span, too many wait to be sent (OTEL_BSP_MAX_QUEUE_SIZE); is the collector reachable?',
    );
  });
  loaded = otel;
}

/** Sends the spans still queued; at shutdown. */
export async function stopTracing(): Promise<void> {
  await loaded?.shutdown();
}
