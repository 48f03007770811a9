import { Module } from '@nestjs/common';
import { McpModule } from '../mcp/mcp.module.js';
import { AgentRelayService } from './agent-relay.service.js';

/**
 * The outbound connection to the agent's server (docs/agent-protocol.md). Needs APP_CONFIG,
 * LOGGER and the agent_server_connected metric from global modules.
 */
@Module({
  imports: [McpModule],
  providers: [AgentRelayService],
  exports: [AgentRelayService],
})
export class RelayModule {}
