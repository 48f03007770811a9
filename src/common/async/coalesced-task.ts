/**
 * Runs an async task soon, one run at a time, starting runs at least `minGapMs` apart. Asked
 * again while it runs, it runs once more after (the run under way may have read the state
 * before the change); however many asks come meanwhile, they make one more run.
 */
export class CoalescedTask {
  private state: 'idle' | 'scheduled' | 'running' | 'stopped' = 'idle';
  private rerunAsked = false;
  private lastStart = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly task: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly minGapMs = 0,
  ) {}

  request(): void {
    if (this.state === 'running') this.rerunAsked = true;
    if (this.state !== 'idle') return;
    this.state = 'scheduled';
    const wait = Math.max(0, this.lastStart + this.minGapMs - performance.now());
    this.timer = setTimeout(() => this.run(), wait).unref();
  }

  /** No run starts any more; resolves once the run under way, if any, has ended. */
  stop(): Promise<void> {
    clearTimeout(this.timer);
    this.state = 'stopped';
    return this.running;
  }

  private run(): void {
    this.state = 'running';
    this.lastStart = performance.now();
    this.running = Promise.resolve()
      .then(() => this.task())
      .catch((error: unknown) => this.report(error))
      .finally(() => {
        if (this.state === 'stopped') return;
        this.state = 'idle';
        if (!this.rerunAsked) return;
        this.rerunAsked = false;
        this.request();
      });
  }

  private report(error: unknown): void {
    try {
      this.onError(error);
    } catch {
      // A failing error handler must not stop the runs (nor reject unhandled).
    }
  }
}
