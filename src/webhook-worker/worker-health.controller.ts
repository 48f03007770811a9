import { Controller, Get } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { HealthProbe } from '../common/http/health-probe.decorator.js';
import { DatabaseHealthIndicator } from '../database/database.health.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';

/** The worker's probes: down (503) only when the database does not answer. */
@Controller('health')
export class WorkerHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly webhook: WebhookHealthIndicator,
  ) {}

  @Get(['', 'ready'])
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.database.check(), () => this.webhook.check()]);
  }

  /** The process alone: answering at all means alive. */
  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }
}
