import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseHealthIndicator } from '../database/database.health.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { DatabaseWatchService } from './health/database-watch.service.js';
import { HealthController } from './health/health.controller.js';
import { McpSupervisorService } from './mcp/mcp-supervisor.service.js';
import { agentMetricProviders } from './metrics/agent-metrics.js';
import { AgentRelayService } from './relay/agent-relay.service.js';

/** The agent: the MCP servers, the relay connection, their metrics and the health probes. */
@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' }), WebhooksModule],
  controllers: [HealthController],
  providers: [
    ...agentMetricProviders,
    McpSupervisorService,
    AgentRelayService,
    DatabaseHealthIndicator,
    DatabaseWatchService,
    WebhookHealthIndicator,
  ],
})
export class AgentModule {}
