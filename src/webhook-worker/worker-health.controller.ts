import { Controller, Get } from '@nestjs/common';
import {
  HealthCheckService,
  HealthIndicatorService,
  type HealthCheckResult,
} from '@nestjs/terminus';
import { HealthProbe } from '../common/http/health-probe.decorator.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';

/** The ping gets most of the probe's 1 s budget, so /health always answers in time. */
const DATABASE_PING_TIMEOUT_MS = 750;

/**
 * The webhook worker's probes, on its health port: down (503) only when the database does not
 * answer; the webhook's receivers and backlog are details.
 */
@Controller('health')
export class WorkerHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    private readonly ping: DatabasePingService,
    private readonly webhook: WebhookHealthIndicator,
  ) {}

  @Get()
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.database(), () => this.webhook.check()]);
  }

  @Get('ready')
  @HealthProbe()
  ready(): Promise<HealthCheckResult> {
    return this.check();
  }

  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  private async database() {
    const session = this.indicator.check('database');
    const result = await this.ping.ping(DATABASE_PING_TIMEOUT_MS);
    return result.up ? session.up() : session.down({ message: result.error ?? 'down' });
  }
}
