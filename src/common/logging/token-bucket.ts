/** `burst` tokens at most, refilled at `ratePerSecond`: what a peer may cost us, with no timer. */
export interface TokenBucketOptions {
  ratePerSecond: number;
  burst: number;
  now?: () => number;
}

export class TokenBucket {
  readonly #rate: number;
  readonly #burst: number;
  readonly #now: () => number;
  #tokens: number;
  #refilledAt: number;

  constructor(options: TokenBucketOptions) {
    this.#rate = options.ratePerSecond;
    this.#burst = options.burst;
    this.#now = options.now ?? Date.now;
    this.#tokens = options.burst;
    this.#refilledAt = this.#now();
  }

  /** Takes `count` tokens if there are that many; false (and nothing taken) otherwise. */
  take(count = 1): boolean {
    this.#refill();
    if (this.#tokens < count) return false;
    this.#tokens -= count;
    return true;
  }

  /** Takes up to `count` tokens; false when the bucket ran dry on the way (an overdraft). */
  drain(count: number): boolean {
    this.#refill();
    this.#tokens -= count;
    if (this.#tokens >= 0) return true;
    this.#tokens = 0;
    return false;
  }

  #refill(): void {
    const now = this.#now();
    const elapsed = Math.max(0, now - this.#refilledAt) / 1_000;
    this.#refilledAt = now;
    this.#tokens = Math.min(this.#burst, this.#tokens + elapsed * this.#rate);
  }
}
