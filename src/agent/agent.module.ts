import { Module } from '@nestjs/common';
import { HealthModule } from './health/health.module.js';
import { McpModule } from './mcp/mcp.module.js';
import { AgentMetricsModule } from './metrics/agent-metrics.module.js';
import { RelayModule } from './relay/relay.module.js';

/** The agent: its health and metrics, the MCP servers of mcp-servers.json, the relay connection. */
@Module({
  imports: [AgentMetricsModule, McpModule, RelayModule, HealthModule],
})
export class AgentModule {}
