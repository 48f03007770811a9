import { Module } from '@nestjs/common';
import { HealthModule } from './health/health.module.js';
import { McpModule } from './mcp/mcp.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { RelayModule } from './relay/relay.module.js';

/**
 * The agent: health on SERVICE_HEALTH_CHECK_PORT, metrics on SERVICE_METRICS_PORT, the MCP
 * servers of mcp-servers.json and the connection to the agent's server.
 */
@Module({
  imports: [MetricsModule, McpModule, RelayModule, HealthModule],
})
export class AgentModule {}
