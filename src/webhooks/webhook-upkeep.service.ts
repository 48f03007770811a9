import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import { LOGGER } from '../common/logging/logger.token.js';
import { RateLimitedLog } from '../common/logging/rate-limited-log.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { WebhookOutboxRepository } from './webhook-outbox.repository.js';
import { describe, reasonOf } from './webhook-sender.js';

/** How often the stops (another process's 410, an operator's re-enable) and backlog are read. */
const REFRESH_MS = 5_000;
/** Finished notices (delivered, failed, stopped) are kept this long, then deleted. */
export const RETENTION_MS = 7 * 24 * 3600_000;
const PRUNE_EVERY_MS = 10 * 60_000;

/** Beside delivery: the stops read every few seconds, the backlog, old notices deleted. */
@Injectable()
export class WebhookUpkeep {
  private readonly backlog = new Map<
    string,
    { pending: number; pendingCapped: boolean; oldestAgeSeconds: number }
  >();
  private readonly log: RateLimitedLog;

  constructor(
    private readonly outbox: WebhookOutboxRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @InjectMetric('webhook_pending_notices') private readonly pending: Gauge,
    @InjectMetric('webhook_pending_notices_capped') private readonly capped: Gauge,
    @InjectMetric('webhook_oldest_pending_age_seconds') private readonly oldestAge: Gauge,
  ) {
    this.log = new RateLimitedLog(logger, { ratePerSecond: 1 / 60, burst: 2 });
  }

  /** The stops of receivers still configured (those of removed ones are forgotten). */
  async loadReceiversState(): Promise<void> {
    const receivers = this.config.webhooks.receivers;
    try {
      await this.outbox.forgetUnconfigured(receivers.map((r) => r.id));
      if (receivers.length > 0) await this.outbox.loadStopped();
    } catch (error) {
      this.logger.warn({ reason: reasonOf(error) }, 'plant webhook: cannot read receivers state');
    }
  }

  /** Runs until `signal`; `delivering` adds the work of a process that delivers. */
  async run(signal: AbortSignal, delivering: boolean, wake: () => void): Promise<void> {
    if (this.config.webhooks.receivers.length === 0) return;
    const loops = [this.every(signal, REFRESH_MS, () => this.refreshStopped(delivering, wake))];
    if (delivering) {
      loops.push(this.every(signal, REFRESH_MS, () => this.refreshBacklog()));
      loops.push(this.every(signal, PRUNE_EVERY_MS, () => this.prune()));
    }
    await Promise.all(loops);
  }

  /** What /health shows: each receiver by id and host (its path may hold a token), its backlog. */
  status(): { delivery: string; receivers: object[] } {
    const receivers = this.config.webhooks.receivers.map(({ id, host }) => ({
      ...{ id, host, stopped: this.outbox.isStopped(id) },
      ...this.backlog.get(id),
    }));
    return { delivery: this.config.webhooks.delivery, receivers };
  }

  private async refreshStopped(delivering: boolean, wake: () => void): Promise<void> {
    const before = this.config.webhooks.receivers.filter((r) => this.outbox.isStopped(r.id));
    await this.outbox.loadStopped();
    for (const receiver of before) {
      if (this.outbox.isStopped(receiver.id)) continue;
      this.logger.info(describe(receiver), 'plant webhook receiver re-enabled');
      wake();
    }
    if (delivering) await this.outbox.closeNoticesOfStopped();
  }

  private async refreshBacklog(): Promise<void> {
    const { receivers, backlogCountCap } = this.config.webhooks;
    const backlog = await this.outbox.backlog(
      receivers.map((r) => r.id),
      backlogCountCap,
    );
    for (const { id } of receivers) {
      const none = { pending: 0, capped: false, oldestAgeMs: 0 };
      const { pending, capped, oldestAgeMs } = backlog.get(id) ?? none;
      // Not clamped: a negative age says a writer's clock runs ahead, which must show.
      const oldestAgeSeconds = oldestAgeMs / 1000;
      this.pending.set({ receiver: id }, pending);
      this.capped.set({ receiver: id }, capped ? 1 : 0);
      this.oldestAge.set({ receiver: id }, oldestAgeSeconds);
      const oldest = Math.round(oldestAgeSeconds);
      this.backlog.set(id, { pending, pendingCapped: capped, oldestAgeSeconds: oldest });
    }
  }

  private async prune(): Promise<void> {
    const configured = this.config.webhooks.receivers.map((r) => r.id);
    let deleted = 0;
    for (let batch = 1000; batch === 1000; deleted += batch) {
      batch = await this.outbox.prune(Date.now() - RETENTION_MS, configured);
    }
    if (deleted > 0) this.logger.info({ deleted }, 'plant webhook: old notices pruned');
  }

  /** `task` every `ms` until `signal`; a failure is logged (the database's words) and retried. */
  private async every(signal: AbortSignal, ms: number, task: () => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      await delay(ms, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return;
      await task().catch((error: unknown) => {
        const message = String(error).slice(0, 200);
        this.log.warn({ reason: reasonOf(error), message }, 'plant webhook: outbox upkeep failed');
      });
    }
  }
}
