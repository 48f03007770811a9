import { Module } from '@nestjs/common';
import { McpSupervisorService } from './mcp-supervisor.service.js';

/**
 * Supervises the MCP servers of `mcp-servers.json`. Needs APP_CONFIG, LOGGER and the metrics
 * mcp_server_up, mcp_server_restarts_total and mcp_server_tools from global modules.
 */
@Module({
  providers: [McpSupervisorService],
  exports: [McpSupervisorService],
})
export class McpModule {}
