/**
 * Runs an async task soon, one run at a time, starting runs at least `minGapMs` apart. Asked
 * again while it runs, it runs once more after (the run under way may have read the state
 * before the change); however many asks come meanwhile, they make one more run.
 */
export class CoalescedTask {
  private state: 'idle' | 'scheduled' | 'running' = 'idle';
  private again = false;
  private lastStart = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly minGapMs = 0,
  ) {}

  request(): void {
    if (this.state === 'running') this.again = true;
    if (this.state !== 'idle') return;
    this.state = 'scheduled';
    const wait = Math.max(0, this.lastStart + this.minGapMs - performance.now());
    setTimeout(() => this.run(), wait).unref();
  }

  private run(): void {
    this.state = 'running';
    this.lastStart = performance.now();
    this.task()
      .catch(this.onError)
      .finally(() => {
        this.state = 'idle';
        if (!this.again) return;
        this.again = false;
        this.request();
      });
  }
}
