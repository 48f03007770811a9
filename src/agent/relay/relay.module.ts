import { Module } from '@nestjs/common';
import { McpModule } from '../mcp/mcp.module.js';
import { AgentMetricsModule } from '../metrics/agent-metrics.module.js';
import { AgentRelayService } from './agent-relay.service.js';

/** The outbound connection to the agent's server (docs/agent-protocol.md). */
@Module({
  imports: [McpModule, AgentMetricsModule],
  providers: [AgentRelayService],
  exports: [AgentRelayService],
})
export class RelayModule {}
