import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { Public } from '../../common/auth/public.decorator.js';
import { HealthProbe } from '../../common/http/health-probe.decorator.js';
import { AgentConnectionHealthIndicator } from './agent-connection.health.js';
import { ConfigHealthIndicator } from './config.health.js';
import { DatabaseHealthIndicator } from './database.health.js';
import { McpHealthIndicator } from './mcp.health.js';
import { WebhookHealthIndicator } from '../../webhooks/webhook.health.js';

/**
 * Probes, served only on SERVICE_HEALTH_CHECK_PORT. /health and /health/ready fail (503) only
 * when the service cannot do its work: the database does not answer. MCP servers and the
 * agent connection are reported in `details` but never fail the probe: a crashing third-party
 * MCP server must not make Kubernetes restart the pod.
 */
@ApiExcludeController()
@Public()
@SkipThrottle()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly config: ConfigHealthIndicator,
    private readonly mcp: McpHealthIndicator,
    private readonly agent: AgentConnectionHealthIndicator,
    private readonly webhook: WebhookHealthIndicator,
  ) {}

  @Get()
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.database.check(),
      () => this.config.check(),
      () => this.mcp.check(),
      () => this.agent.check(),
      () => this.webhook.check(),
    ]);
  }

  @Get('ready')
  @HealthProbe()
  ready(): Promise<HealthCheckResult> {
    return this.check();
  }

  /** The process alone: answering at all means alive. */
  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }
}
