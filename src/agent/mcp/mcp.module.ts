import { Module } from '@nestjs/common';
import { AgentMetricsModule } from '../metrics/agent-metrics.module.js';
import { McpSupervisorService } from './mcp-supervisor.service.js';

/**
 * Supervises the MCP servers of `mcp-servers.json`. Needs APP_CONFIG and LOGGER from global
 * modules; its metrics (mcp_server_up, mcp_server_restarts_total, mcp_server_tools) are the agent's.
 */
@Module({
  imports: [AgentMetricsModule],
  providers: [McpSupervisorService],
  exports: [McpSupervisorService],
})
export class McpModule {}
