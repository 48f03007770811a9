import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { McpSupervisorService } from '../mcp/mcp-supervisor.service.js';

/**
 * The MCP servers' states, for operators. Always "up": a crashing third-party MCP server must
 * not fail the probe and make Kubernetes restart the pod (the supervisor restarts it).
 */
@Injectable()
export class McpHealthIndicator {
  constructor(
    private readonly indicator: HealthIndicatorService,
    private readonly supervisor: McpSupervisorService,
  ) {}

  check(key = 'mcpServers'): HealthIndicatorResult {
    const problems = this.supervisor.reloadProblems();
    return this.indicator.check(key).up({
      servers: this.supervisor.snapshot(),
      ...(problems.length > 0 ? { reloadProblems: problems } : {}),
    });
  }
}
