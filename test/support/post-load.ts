import type { RunningApp } from './app-process.js';
import { call } from './http.js';
import { waitFor } from './webhook-receiver.js';

/** One POST /plants of a loop, as its client saw it. */
export interface Answered {
  loop: number;
  id: number;
  /** 0: no HTTP answer at all. */
  status: number;
  retryAfter: string | null;
  startedAt: number;
}

/**
 * Clients POSTing new plants back to back through a primary change: each loop runs until
 * `afterSwitchMs` past `switched()`, so the answers show the gap and the steady state after it.
 * Ids start at `firstId`: another load on the same database must not repeat them (a POST of a
 * stored plant's body is answered 200 again, and writes no new notice).
 */
export class PostLoad {
  readonly answers: Answered[] = [];
  switchedAt = 0;
  endedAt = 0;
  /** Set by the test once every acknowledged plant's notice arrived. */
  notifiedAt = 0;
  private readonly done: Promise<unknown>;

  constructor(
    private readonly app: RunningApp,
    readonly loops: number,
    afterSwitchMs: number,
    firstId: number,
  ) {
    const over = () => this.switchedAt > 0 && Date.now() > this.switchedAt + afterSwitchMs;
    this.done = Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        for (let n = 0; !over(); n++)
          this.answers.push(await this.post(loop, firstId + loop * 1e6 + n));
      }),
    ).then(() => (this.endedAt = Date.now()));
  }

  private async post(loop: number, id: number): Promise<Answered> {
    const startedAt = Date.now();
    const body = `{"id": ${id}, "name": "p${id}"}`;
    try {
      const answer = await call(`${this.app.apiUrl}/plants`, {
        method: 'POST',
        token: this.app.token,
        body,
      });
      const retryAfter = answer.headers.get('retry-after');
      return { loop, id, status: answer.status, retryAfter, startedAt };
    } catch {
      return { loop, id, status: 0, retryAfter: null, startedAt };
    }
  }

  untilAcknowledged(count: number): Promise<void> {
    return waitFor('acknowledged plants', () => this.acknowledged().length >= count, 30_000);
  }

  /** The service's address now reaches the new primary. */
  switched(): void {
    this.switchedAt = Date.now();
  }

  /** Resolves when every loop has ended. */
  finished(): Promise<unknown> {
    return this.done;
  }

  acknowledged(): number[] {
    return this.answers.filter((a) => a.status === 200).map((a) => a.id);
  }

  statuses(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { status } of this.answers) counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }

  /** Answers started `sinceMs` after the switch, by loop. */
  answersAfter(sinceMs: number): Answered[][] {
    const late = this.answers.filter((a) => a.startedAt > this.switchedAt + sinceMs);
    return Array.from({ length: this.loops }, (_, loop) => late.filter((a) => a.loop === loop));
  }

  /** Milliseconds from the switch to the slowest loop's first 200 after it. */
  firstOkAfterSwitch(): number {
    const firstOk = (loop: number) =>
      this.answers.find((a) => a.loop === loop && a.startedAt > this.switchedAt && a.status === 200)
        ?.startedAt ?? Infinity;
    return Math.max(...this.answersAfter(0).map((_, loop) => firstOk(loop) - this.switchedAt));
  }
}
