/** Exponential backoff with jitter, so agents restarting at once do not retry in lockstep. */
export const DEFAULT_BACKOFF = {
  initialMs: 1_000,
  maxMs: 60_000,
  /** 0 disables jitter; 0.2 gives delays between 80 % and 100 % of the nominal one. */
  jitterRatio: 0.2,
};

export type BackoffOptions = typeof DEFAULT_BACKOFF & { random?: () => number };

export class Backoff {
  #attempts = 0;
  readonly #random: () => number;

  constructor(private readonly options: BackoffOptions = DEFAULT_BACKOFF) {
    this.#random = options.random ?? Math.random;
  }

  get attempts(): number {
    return this.#attempts;
  }

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const nominal = Math.min(this.options.maxMs, this.options.initialMs * 2 ** this.#attempts);
    this.#attempts++;
    return this.#jitter(nominal);
  }

  /** The longest delay, for cases that must not retry quickly (crash loop, rejected token). */
  max(): number {
    this.#attempts++;
    return this.#jitter(this.options.maxMs);
  }

  reset(): void {
    this.#attempts = 0;
  }

  #jitter(nominal: number): number {
    return Math.round(nominal * (1 - this.options.jitterRatio * this.#random()));
  }
}
