import type { Context } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';

/** Why spans never reached the collector: too many held, or their export failed. */
export type DropReason = 'queue_full' | 'export_failed';

// Caps the finished spans held (waiting or being sent) at `max` and reports those dropped past
// it or lost in a failed export: a dead collector must not grow the process, and losses show.
export class BoundedSpanProcessor implements SpanProcessor {
  private held = 0;
  private readonly inner: SpanProcessor;

  constructor(
    makeProcessor: (exporter: SpanExporter) => SpanProcessor,
    exporter: SpanExporter,
    private readonly max: number,
    private readonly dropped: (reason: DropReason, spans: number, error?: Error) => void,
  ) {
    this.inner = makeProcessor({
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) =>
        exporter.export(spans, (result) => {
          this.held -= spans.length;
          if (result.code !== ExportResultCode.SUCCESS) {
            this.dropped('export_failed', spans.length, result.error);
          }
          done(result);
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    });
  }

  /** Spans finished but not yet sent (waiting, or in an export that has not ended). */
  get pending(): number {
    return this.held;
  }

  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if (this.held >= this.max) {
      this.dropped('queue_full', 1);
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
