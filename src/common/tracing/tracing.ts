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
): Promise<void> {
  if (!config || loaded) return;
  const otel = await import('./otel.js');
  otel.start(config, version);
  loaded = otel;
}

/** Sends the spans still queued; at shutdown. */
export async function stopTracing(): Promise<void> {
  await loaded?.shutdown();
}
