import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import { LOGGER } from '../common/logging/logger.token.js';
import { RateLimitedLog } from '../common/logging/rate-limited-log.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import { listenForNotices } from './outbox-listener.js';
import { PRIVATE_ADDRESS } from './webhook-http.js';
import { type ClaimedNotice, WebhookOutboxRepository } from './webhook-outbox.repository.js';
import { type Attempt, describe, reasonOf, retryAfterMs, WebhookSender } from './webhook-sender.js';
import { WebhookUpkeep } from './webhook-upkeep.service.js';

/** Per attempt, the whole answer included (as Svix). */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** A claim's lease: a whole attempt plus room to record it (a statement's timeout); never renewed. */
export const LEASE_MS = ATTEMPT_TIMEOUT_MS + 10_000;
/** The safety net beside the wake-ups: due retries, expired leases, missed notifications. */
const POLL_MS = 2_000;
/**
 * How long notices gather after a wake-up unless there is a backlog: a claim per commit took
 * a row or two at twice the CPU per notice (bench/webhook-overhead.mjs).
 */
const GATHER_MS = 25;
const RESULT_LABEL = { delivered: '2xx', gone: '410', retry: 'retry' } as const;
const resultLabel = (attempt: Exclude<Attempt, { kind: 'aborted' }>) =>
  attempt.kind === 'retry' && attempt.error === PRIVATE_ADDRESS
    ? 'private_address'
    : RESULT_LABEL[attempt.kind];

type Sent = { notice: ClaimedNotice; attempt: Attempt };
type Retry = Extract<Attempt, { kind: 'retry' }>;

/**
 * Claims each receiver's due notices with a lease, POSTs them and records the outcomes: 2xx
 * delivered, 410 stops the receiver, else retried. Woken by commits, NOTIFY and a poll.
 */
@Injectable()
export class WebhookDelivery implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly owner = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly abort = new AbortController();
  private readonly inFlight = new Map<string, number>();
  private readonly tasks = new Set<Promise<unknown>>();
  private readonly sender: WebhookSender;
  private readonly dbLog: RateLimitedLog;
  private woken = false;
  private wakeUp = () => {};
  private readonly delivering: boolean;

  constructor(
    private readonly outbox: WebhookOutboxRepository,
    private readonly upkeep: WebhookUpkeep,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @InjectMetric('webhook_deliveries_total') private readonly finished: Counter,
    @InjectMetric('webhook_delivery_attempts_total') private readonly attempts: Counter,
    @InjectMetric('webhook_answers_cut_total') private readonly answersCut: Counter,
    @InjectMetric('webhook_delivery_duration_seconds') private readonly duration: Histogram,
  ) {
    this.dbLog = new RateLimitedLog(logger, { ratePerSecond: 1 / 60, burst: 2 });
    const { receivers, delivery } = config.webhooks;
    this.delivering = receivers.length > 0 && delivery !== 'external';
    this.sender = new WebhookSender(config.webhooks, ATTEMPT_TIMEOUT_MS);
    // Each attempt in flight listens for the stop: as many as the in-flight caps allow.
    const attemptsAtOnce = receivers.length * config.webhooks.maxInFlightPerReceiver;
    setMaxListeners(attemptsAtOnce + 10, this.abort.signal);
  }

  async onApplicationBootstrap(): Promise<void> {
    // Before any plant is taken: no notice is written for a receiver stopped by a 410.
    await this.upkeep.loadReceiversState();
    this.track(this.upkeep.run(this.abort.signal, this.delivering, () => this.wake()));
    if (!this.delivering) return;
    await this.outbox.releaseLeases(undefined);
    this.outbox.onCommitted = () => this.wake();
    // Only a worker LISTENs: a process that writes notices wakes its own delivery, and waking
    // every replica on every commit cost each a claim per receiver for nothing (the poll covers).
    if (this.config.database.kind === 'postgres' && this.config.webhooks.delivery === 'worker') {
      const url = this.config.database.url.reveal();
      this.track(listenForNotices(url, this.abort.signal, () => this.wake(), this.dbLog, POLL_MS));
    }
    this.track(this.run());
    const receivers = this.config.webhooks.receivers.map(describe);
    this.logger.info({ receivers }, 'plant webhook delivery started');
  }

  /** Attempts in flight are cut (no retry charged) and their leases handed back. */
  async beforeApplicationShutdown(): Promise<void> {
    this.outbox.onCommitted = undefined;
    this.abort.abort();
    this.wake();
    await Promise.all(this.tasks);
    await this.sender.close();
    if (!this.delivering) return;
    await this.outbox.releaseLeases(this.owner).catch((error: unknown) => {
      this.logger.warn({ reason: reasonOf(error) }, 'plant webhook: cannot release leases');
    });
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp();
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      this.woken = false;
      let backlog = false;
      try {
        for (const receiver of this.config.webhooks.receivers) {
          backlog = (await this.claimFor(receiver)) || backlog;
        }
      } catch (error) {
        this.dbLog.warn({ reason: reasonOf(error) }, 'plant webhook: cannot read the outbox');
      }
      if (!this.woken) await this.pause(POLL_MS);
      if (this.woken && !backlog) await delay(GATHER_MS);
    }
  }

  /** Claims the receiver's due notices it has room for, and sends them; true if it filled it. */
  private async claimFor(receiver: WebhookReceiver): Promise<boolean> {
    if (this.outbox.isStopped(receiver.id) || this.abort.signal.aborted) return false;
    const busy = this.inFlight.get(receiver.id) ?? 0;
    const room = this.config.webhooks.maxInFlightPerReceiver - busy;
    if (room <= 0) return false;
    const notices = await this.outbox.claim(receiver.id, room, this.owner, LEASE_MS);
    if (notices.length === 0) return false;
    this.inFlight.set(receiver.id, busy + notices.length);
    const done = () => {
      this.inFlight.set(receiver.id, (this.inFlight.get(receiver.id) ?? 0) - notices.length);
      this.wake(); // room for more
    };
    this.track(this.send(receiver, notices).finally(done));
    return notices.length === room;
  }

  private async send(receiver: WebhookReceiver, notices: ClaimedNotice[]): Promise<void> {
    const signal = this.abort.signal;
    const sent = await Promise.all(
      notices.map(async (notice) => ({
        notice,
        attempt: await this.sender.attempt(receiver, notice, signal),
      })),
    );
    try {
      await this.record(receiver, sent);
    } catch (error) {
      // Their leases run out and they are attempted again: at least once holds.
      const reason = reasonOf(error);
      this.dbLog.warn({ receiver: receiver.id, reason }, 'plant webhook: cannot record outcomes');
    }
  }

  private async record(receiver: WebhookReceiver, sent: Sent[]): Promise<void> {
    const labels = { receiver: receiver.id };
    for (const { attempt } of sent) {
      if (attempt.kind === 'aborted') continue;
      this.attempts.inc({ ...labels, result: resultLabel(attempt) });
      this.duration.observe(labels, attempt.seconds);
      if (attempt.answerCut) this.answersCut.inc(labels);
    }
    const delivered = sent.filter((s) => s.attempt.kind === 'delivered').map((s) => s.notice.id);
    if (delivered.length > 0) {
      await this.outbox.record(delivered, this.owner, { delivered: true });
      this.finished.inc({ ...labels, outcome: 'delivered' }, delivered.length);
    }
    if (sent.some((s) => s.attempt.kind === 'gone')) {
      await this.outbox.stopReceiver(receiver);
      this.finished.inc({ ...labels, outcome: 'stopped' });
      const message = 'plant webhook receiver answered 410 Gone: no more notices are sent to it';
      this.logger.warn(describe(receiver), message);
      return;
    }
    for (const { notice, attempt } of sent) {
      if (attempt.kind === 'retry') await this.recordRetry(receiver, notice, attempt);
    }
  }

  /** Due again after the schedule's next delay (or the receiver's Retry-After); else failed. */
  private async recordRetry(receiver: WebhookReceiver, notice: ClaimedNotice, attempt: Retry) {
    const attempts = notice.attempts + 1;
    const delaySeconds = this.config.webhooks.retrySchedule[attempts - 1];
    const { error } = attempt;
    const log = { receiver: receiver.id, event: notice.eventId, attempts, reason: error };
    if (delaySeconds === undefined) {
      await this.outbox.record([notice.id], this.owner, { error, retryInMs: undefined });
      this.finished.inc({ receiver: receiver.id, outcome: 'failed' });
      this.logger.warn(log, 'plant webhook notice failed: retries exhausted');
      return;
    }
    const delayMs = retryAfterMs(attempt.retryAfter) ?? delaySeconds * 1000;
    await this.outbox.record([notice.id], this.owner, { error, retryInMs: delayMs });
    // A retry due before the next poll is woken for, not left to wait for it.
    if (delayMs < POLL_MS) setTimeout(() => this.wake(), delayMs).unref();
    this.logger.info({ ...log, retryInMs: delayMs }, 'plant webhook attempt failed; retrying');
  }

  private track(task: Promise<unknown>): void {
    this.tasks.add(task);
    void task.finally(() => this.tasks.delete(task));
  }

  /** Until `wake()` (the stop wakes too) or `ms`, whichever comes first. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
