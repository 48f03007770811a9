import { type Tracing, tracing } from '../common/tracing/tracing.js';

/**
 * Group commit: writes that arrive while the store is busy go in one statement and one
 * transaction, so one fsync acknowledges many requests, each only once its flush committed.
 * Items with the same key never share a flush, so the database decides a duplicate.
 */
export interface GroupCommitOptions<T, R> {
  flush: (items: T[]) => Promise<R[]>;
  key: (item: T) => string;
  maxBatch: number;
  /** Flushes in flight at once: 1 for SQLite's single writer, more for a PostgreSQL pool. */
  concurrency: number;
  /**
   * Runs after a flush committed, before any item is answered; if it throws, every item is
   * rejected: a commit a restart would not find (the file deleted meanwhile) is never acknowledged.
   */
  confirm?: () => void;
  /** With tracing on, each flush is a span of this name, linked to its items' requests. */
  spanName?: string;
}

interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
  /** With tracing on: the trace the item was pushed in. */
  context?: ReturnType<Tracing['activeContext']>;
}

export class GroupCommitQueue<T, R> {
  private queue: Pending<T, R>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  push(item: T): Promise<R> {
    const context = tracing()?.activeContext();
    return new Promise<R>((resolve, reject) => {
      this.queue.push(context ? { item, resolve, reject, context } : { item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.concurrency || this.queue.length === 0) {
      return;
    }
    this.scheduled = true;
    // setImmediate lets every request already parsed in this turn of the loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flushNext();
    });
  }

  private flushNext(): void {
    if (this.inFlight >= this.options.concurrency || this.queue.length === 0) return;
    const batch: Pending<T, R>[] = [];
    const rest: Pending<T, R>[] = [];
    const keys = new Set<string>();
    for (const pending of this.queue) {
      const key = this.options.key(pending.item);
      if (batch.length < this.options.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(pending);
      } else {
        rest.push(pending);
      }
    }
    this.queue = rest;
    this.inFlight++;
    const span = this.startSpan(batch);
    this.options
      .flush(batch.map((p) => p.item))
      .then((results) => {
        this.options.confirm?.();
        return results;
      })
      .then(
        (results) => {
          span?.end();
          batch.forEach((p, i) => p.resolve(results[i] as R));
        },
        (error: unknown) => {
          span?.end(error instanceof Error ? error.name : 'error');
          batch.forEach((p) => p.reject(error));
        },
      )
      .finally(() => {
        this.inFlight--;
        this.schedule();
      });
    this.schedule();
  }

  /** The flush as a span in its first item's trace, linked to every item's. */
  private startSpan(batch: Pending<T, R>[]): { end(error?: string): void } | undefined {
    const otel = tracing();
    const first = batch[0]?.context;
    if (!otel || !first || !this.options.spanName) return undefined;
    const links = batch.flatMap((p) => (p.context ? [otel.linkTo(p.context)] : []));
    const span = otel.startSpan(
      this.options.spanName,
      otel.SpanKind.INTERNAL,
      { 'db.operation.batch.size': batch.length },
      first,
      links.filter((link) => link !== undefined),
    );
    return { end: (error) => otel.endSpan(span, error) };
  }
}
