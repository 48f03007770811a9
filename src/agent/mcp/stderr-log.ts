import type { Logger } from 'pino';
import { TokenBucket } from '../../common/logging/token-bucket.js';

/** A child's stderr, as rate-limited log lines; always drained, as a full pipe blocks it. */
const DEFAULT_STDERR_LOG = {
  ratePerSecond: 20,
  /** Lines that may pass at once after a quiet spell (a stack trace). */
  burst: 100,
  keepLines: 20,
  /** A longer line is cut: a child without newlines must not grow our memory. */
  maxLineLength: 4_096,
};

export type StderrLogOptions = typeof DEFAULT_STDERR_LOG & { now?: () => number };

export class StderrLog {
  readonly #options: StderrLogOptions;
  readonly #bucket: TokenBucket;
  #partial = '';
  #dropped = 0;
  readonly #recent: string[] = [];

  constructor(
    private readonly logger: Pick<Logger, 'info' | 'warn'>,
    options: Partial<StderrLogOptions> = {},
  ) {
    this.#options = { ...DEFAULT_STDERR_LOG, ...options };
    this.#bucket = new TokenBucket(this.#options);
  }

  write(chunk: Buffer | string): void {
    const lines = (this.#partial + chunk.toString()).split('\n');
    this.#partial = lines.pop() ?? '';
    if (this.#partial.length > this.#options.maxLineLength) {
      lines.push(this.#partial);
      this.#partial = '';
    }
    for (const line of lines) this.#accept(line);
  }

  /** The child is gone: log what is left of an unterminated line and any pending drop note. */
  end(): void {
    if (this.#partial !== '') this.#accept(this.#partial);
    this.#partial = '';
    this.#flushDropped();
  }

  /** The last lines, oldest first. */
  recent(): string[] {
    return [...this.#recent];
  }

  #accept(raw: string): void {
    const text = raw.replace(/\r$/, '').slice(0, this.#options.maxLineLength);
    if (text.trim() === '') return;
    this.#recent.push(text);
    if (this.#recent.length > this.#options.keepLines) this.#recent.shift();
    if (!this.#bucket.take()) {
      this.#dropped++;
      return;
    }
    this.#flushDropped();
    this.logger.info({ stream: 'stderr' }, text);
  }

  #flushDropped(): void {
    if (this.#dropped === 0) return;
    const dropped = this.#dropped;
    this.logger.warn({ stream: 'stderr', dropped }, `${dropped} stderr lines dropped (rate limit)`);
    this.#dropped = 0;
  }
}
