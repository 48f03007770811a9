import { Injectable, ServiceUnavailableException } from '@nestjs/common';
import {
  HealthCheckService,
  HealthIndicatorService,
  type HealthCheckResult,
} from '@nestjs/terminus';
import { DatabasePingService } from '../database/database-ping.service.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';

/** The ping gets most of the probe's 1 s budget, so /health always answers in time. */
const DATABASE_PING_TIMEOUT_MS = 750;

/** A probe's answer: Terminus's own body, 200 when up and 503 when down. */
export interface ProbeAnswer {
  status: number;
  body: HealthCheckResult;
}

/**
 * The webhook worker's probes: down (503) only when the database does not answer; the
 * webhook's receivers and backlog are details.
 */
@Injectable()
export class WorkerHealth {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    private readonly ping: DatabasePingService,
    private readonly webhook: WebhookHealthIndicator,
  ) {}

  /** GET /health and /health/ready. */
  ready(): Promise<ProbeAnswer> {
    return this.answer([() => this.database(), () => this.webhook.check()]);
  }

  /** GET /health/live: the process answers. */
  live(): Promise<ProbeAnswer> {
    return this.answer([]);
  }

  private async answer(checks: Parameters<HealthCheckService['check']>[0]): Promise<ProbeAnswer> {
    try {
      return { status: 200, body: await this.health.check(checks) };
    } catch (error) {
      // Terminus says "down" by throwing its result in a 503.
      if (!(error instanceof ServiceUnavailableException)) throw error;
      return { status: 503, body: error.getResponse() as HealthCheckResult };
    }
  }

  private async database() {
    const session = this.indicator.check('database');
    const result = await this.ping.ping(DATABASE_PING_TIMEOUT_MS);
    return result.up ? session.up() : session.down({ message: result.error ?? 'down' });
  }
}
