import { Controller, Get, Inject } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import {
  HealthCheckService,
  type HealthCheckResult,
  type HealthIndicatorResult,
  HealthIndicatorService,
} from '@nestjs/terminus';
import { Public } from '../../common/auth/public.decorator.js';
import { HealthProbe } from '../../common/http/health-probe.decorator.js';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { WebhookHealthIndicator } from '../../webhooks/webhook.health.js';
import { McpSupervisorService } from '../mcp/mcp-supervisor.service.js';
import { AgentRelayService } from '../relay/agent-relay.service.js';
import { DatabaseHealthIndicator } from '../../database/database.health.js';

/** Probes; only the database fails them: a crashing MCP server must not restart the pod. */
@ApiExcludeController()
@Public()
@SkipThrottle()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    private readonly database: DatabaseHealthIndicator,
    private readonly webhook: WebhookHealthIndicator,
    private readonly mcp: McpSupervisorService,
    private readonly relay: AgentRelayService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get(['', 'ready'])
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    const { mcp, agent } = this.config;
    const problems = this.mcp.reloadProblems();
    return this.health.check([
      () => this.database.check(),
      () =>
        this.up('config', {
          mcpServersFile: mcp.file,
          mcpServersFileFound: !mcp.absent,
          agentConnection: agent ? 'enabled' : 'disabled',
        }),
      () =>
        this.up('mcpServers', {
          servers: this.mcp.snapshot(),
          ...(problems.length > 0 ? { reloadProblems: problems } : {}),
        }),
      () => this.up('agentServer', { ...this.relay.status() }),
      () => this.webhook.check(),
    ]);
  }

  /** The process alone: answering at all means alive. */
  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /** A detail for operators, never a reason to fail the probe. */
  private up(key: string, details: Record<string, unknown>): HealthIndicatorResult {
    return this.indicator.check(key).up(details);
  }
}
