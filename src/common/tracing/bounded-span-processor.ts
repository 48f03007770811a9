import type { Context } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';

/**
 * Caps the finished spans held in the process (waiting to be sent, or being sent) at `max`,
 * and counts each span dropped past it (`dropped`, a metric): a collector that is down or slow
 * must not grow the process's memory. Wraps the batch processor and its exporter, whose own
 * queue then never fills.
 */
export class BoundedSpanProcessor implements SpanProcessor {
  private held = 0;
  private readonly inner: SpanProcessor;

  constructor(
    makeProcessor: (exporter: SpanExporter) => SpanProcessor,
    exporter: SpanExporter,
    private readonly max: number,
    private readonly dropped: () => void,
  ) {
    this.inner = makeProcessor({
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) =>
        exporter.export(spans, (result) => {
          this.held -= spans.length;
          done(result);
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    });
  }

  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if (this.held >= this.max) {
      this.dropped();
      return;
    }
    this.held++;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
