import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { BoundedSpanProcessor } from './bounded-span-processor.js';

/** An exporter that holds each export until the test settles it (a slow collector). */
function slowExporter() {
  const pending: (() => void)[] = [];
  const exporter: SpanExporter = {
    export: (_spans, done) => pending.push(() => done({ code: 0 })),
    shutdown: () => Promise.resolve(),
  };
  return { exporter, settleAll: () => pending.splice(0).forEach((settle) => settle()) };
}

/** A processor that exports every span at once (the batch processor's job, without timers). */
const exportAtOnce = (exporter: SpanExporter) => ({
  onStart: () => undefined,
  onEnd: (span: ReadableSpan) => exporter.export([span], () => undefined),
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
});

const span = {} as ReadableSpan;

describe('BoundedSpanProcessor', () => {
  it('drops and counts the spans past the cap while the collector is slow, then takes more', () => {
    const { exporter, settleAll } = slowExporter();
    let dropped = 0;
    const processor = new BoundedSpanProcessor(exportAtOnce, exporter, 2, () => dropped++);
    for (let i = 0; i < 5; i++) processor.onEnd(span);
    expect(dropped).toBe(3);
    settleAll();
    processor.onEnd(span);
    processor.onEnd(span);
    expect(dropped).toBe(3);
    processor.onEnd(span);
    expect(dropped).toBe(4);
  });

  it('reports the spans of a failed export as export_failed, and holds them no longer', () => {
    const exporter: SpanExporter = {
      export: (spans, done) => done({ code: spans.length > 0 ? 1 : 0 }),
      shutdown: () => Promise.resolve(),
    };
    const lost: string[] = [];
    const processor = new BoundedSpanProcessor(exportAtOnce, exporter, 2, (reason, spans) =>
      lost.push(`${reason}:${spans}`),
    );
    for (let i = 0; i < 3; i++) processor.onEnd(span);
    expect(lost).toEqual(['export_failed:1', 'export_failed:1', 'export_failed:1']);
    expect(processor.pending).toBe(0);
  });
});
