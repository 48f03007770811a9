/**
 * Runs an async task soon, one run at a time. Asked again while it runs, it runs once more after
 * (the run under way may have read the state before the change); many asks make one more run.
 */
export class CoalescedTask {
  private running = false;
  private again = false;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  request(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    setImmediate(() => {
      this.task()
        .catch(this.onError)
        .finally(() => {
          this.running = false;
          if (!this.again) return;
          this.again = false;
          this.request();
        });
    });
  }
}
