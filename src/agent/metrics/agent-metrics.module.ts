import { Module } from '@nestjs/common';
import { agentMetricProviders } from './agent-metrics.js';

/** The agent's metrics (agent-metrics.ts), for the MCP supervisor and the relay connection. */
@Module({
  providers: agentMetricProviders,
  exports: agentMetricProviders,
})
export class AgentMetricsModule {}
