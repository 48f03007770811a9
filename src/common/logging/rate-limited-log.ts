import type { Logger } from 'pino';
import { TokenBucket, type TokenBucketOptions } from './token-bucket.js';

// Warnings about what a peer sent, through a token bucket: 50,000 junk frames must not become
// 50,000 lines. The next line that passes carries the count of those held back (`suppressed`).
export const DEFAULT_LOG_RATE: Omit<TokenBucketOptions, 'now'> = { ratePerSecond: 1, burst: 10 };

export class RateLimitedLog {
  readonly #bucket: TokenBucket;
  #suppressed = 0;

  constructor(
    private readonly logger: Logger,
    options: Partial<TokenBucketOptions> = {},
  ) {
    this.#bucket = new TokenBucket({ ...DEFAULT_LOG_RATE, ...options });
  }

  warn(fields: Record<string, unknown>, message: string): void {
    this.#write('warn', fields, message);
  }

  /** An info line through the same bucket (a peer's connects and disconnects). */
  info(fields: Record<string, unknown>, message: string): void {
    this.#write('info', fields, message);
  }

  #write(level: 'warn' | 'info', fields: Record<string, unknown>, message: string): void {
    if (!this.#bucket.take()) {
      this.#suppressed++;
      return;
    }
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    this.logger[level](suppressed > 0 ? { ...fields, suppressed } : fields, message);
  }
}
