import { Injectable, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { DatabaseHealthIndicator } from '../database/database.health.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';

/** A probe's answer: Terminus's own body, 200 when up and 503 when down. */
export interface ProbeAnswer {
  status: number;
  body: HealthCheckResult;
}

/** The worker's probes: down (503) only when the database does not answer. */
@Injectable()
export class WorkerHealth {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly webhook: WebhookHealthIndicator,
  ) {}

  /** GET /health and /health/ready. */
  ready(): Promise<ProbeAnswer> {
    return this.answer([() => this.database.check(), () => this.webhook.check()]);
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
}
