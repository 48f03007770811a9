/**
 * At most one log line per interval for an event anyone on the network can cause (a refused
 * agent token, garbage frames): `take()` says whether to log now and how many were left
 * unlogged since the last line, so the count still reaches the log.
 */
export class LogThrottle {
  private last = -Infinity;
  private suppressed = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(): { log: boolean; suppressed: number } {
    const now = this.now();
    if (now - this.last < this.intervalMs) {
      this.suppressed++;
      return { log: false, suppressed: 0 };
    }
    this.last = now;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    return { log: true, suppressed };
  }
}
