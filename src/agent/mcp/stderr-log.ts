/**
 * A child's stderr, split into lines, forwarded to the agent's log through a token bucket, and
 * remembered (the last few lines) for `/health` details and crash reports.
 *
 * The pipe is always drained, whatever the rate: an unread stderr pipe fills up (64 KiB on
 * Linux) and then blocks the child mid-write, which looks like a hung MCP session
 * (modelcontextprotocol/typescript-sdk#2776). Lines over the rate are counted, not logged, and a
 * "N lines dropped" note is written once the bucket has tokens again.
 */
export interface StderrLogOptions {
  /** Lines per second let through on average. */
  ratePerSecond: number;
  /** Lines that may pass at once after a quiet spell (a stack trace). */
  burst: number;
  /** Lines kept for snapshot() and crash reports. */
  keepLines: number;
  /** A longer line is cut: a child without newlines must not grow our memory. */
  maxLineLength: number;
  now?: () => number;
}

export const DEFAULT_STDERR_LOG: StderrLogOptions = {
  ratePerSecond: 20,
  burst: 100,
  keepLines: 20,
  maxLineLength: 4_096,
};

export interface StderrSink {
  line(text: string): void;
  dropped(count: number): void;
}

export class StderrLog {
  readonly #options: StderrLogOptions;
  readonly #now: () => number;
  #partial = '';
  #tokens: number;
  #refilledAt: number;
  #dropped = 0;
  readonly #recent: string[] = [];

  constructor(
    private readonly sink: StderrSink,
    options: Partial<StderrLogOptions> = {},
  ) {
    this.#options = { ...DEFAULT_STDERR_LOG, ...options };
    this.#now = this.#options.now ?? Date.now;
    this.#tokens = this.#options.burst;
    this.#refilledAt = this.#now();
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
    if (this.#dropped > 0) {
      this.sink.dropped(this.#dropped);
      this.#dropped = 0;
    }
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

    this.#refill();
    if (this.#tokens < 1) {
      this.#dropped++;
      return;
    }
    this.#tokens--;
    if (this.#dropped > 0) {
      this.sink.dropped(this.#dropped);
      this.#dropped = 0;
    }
    this.sink.line(text);
  }

  #refill(): void {
    const now = this.#now();
    const elapsed = (now - this.#refilledAt) / 1_000;
    this.#refilledAt = now;
    this.#tokens = Math.min(
      this.#options.burst,
      this.#tokens + elapsed * this.#options.ratePerSecond,
    );
  }
}
