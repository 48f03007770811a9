import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';

/**
 * The configured agents and their connections, names and counts only. Always "up": a missing
 * agent is the agent's problem, which restarting the relay would not fix.
 */
@Injectable()
export class AgentsHealthIndicator {
  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    private readonly registry: AgentRegistry,
    private readonly indicator: HealthIndicatorService,
  ) {}

  check() {
    const agents = Object.fromEntries(
      this.config.agents.map((agent) => {
        const connections = this.registry.of(agent.name);
        const up = new Set(
          connections.flatMap((c) => c.servers.filter((s) => s.state === 'up').map((s) => s.name)),
        );
        return [agent.name, { connections: connections.length, serversUp: [...up].sort() }];
      }),
    );
    return this.indicator.check('agents').up({ agents });
  }
}
