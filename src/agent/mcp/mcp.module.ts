import { Module } from '@nestjs/common';
import { AgentMetricsModule } from '../metrics/agent-metrics.module.js';
import { McpSupervisorService } from './mcp-supervisor.service.js';

/** Supervises the MCP servers of `mcp-servers.json`. */
@Module({
  imports: [AgentMetricsModule],
  providers: [McpSupervisorService],
  exports: [McpSupervisorService],
})
export class McpModule {}
