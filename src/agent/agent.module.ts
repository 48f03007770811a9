import { Module } from '@nestjs/common';
import { HealthModule } from './health/health.module.js';
import { McpModule } from './mcp/mcp.module.js';
import { AgentMetricsModule } from './metrics/agent-metrics.module.js';
import { RelayModule } from './relay/relay.module.js';

/**
 * The agent: health on SERVICE_HEALTH_CHECK_PORT, its metrics (db_up, the MCP servers', the
 * connection's) on SERVICE_METRICS_PORT, the MCP servers of mcp-servers.json and the connection to the agent's server.
 */
@Module({
  imports: [AgentMetricsModule, McpModule, RelayModule, HealthModule],
})
export class AgentModule {}
