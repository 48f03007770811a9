/** Per-key counts (requests in flight, connections) against a cap; a release runs only once. */
export class InFlightLimiter {
  private readonly counts = new Map<string, number>();

  constructor(readonly max: number) {}

  acquire(key: string): (() => void) | undefined {
    const count = this.counts.get(key) ?? 0;
    if (count >= this.max) return undefined;
    this.counts.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.counts.get(key) ?? 1) - 1;
      if (now === 0) this.counts.delete(key);
      else this.counts.set(key, now);
    };
  }

  count(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}
