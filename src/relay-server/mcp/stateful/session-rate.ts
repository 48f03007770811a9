const MINUTE_MS = 60_000;

/** Counts each client's new sessions per minute; one fixed window for all: no timer nor sweep. */
export class SessionRate {
  private readonly counts = new Map<string, number>();
  private windowStart = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(client: string): boolean {
    const now = this.now();
    if (now - this.windowStart >= MINUTE_MS) {
      this.counts.clear();
      this.windowStart = now;
    }
    const count = this.counts.get(client) ?? 0;
    if (count >= this.perMinute) return false;
    this.counts.set(client, count + 1);
    return true;
  }
}
