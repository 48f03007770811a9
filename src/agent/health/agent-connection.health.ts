import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { AgentRelayService } from '../relay/agent-relay.service.js';

/** The connection to the agent's server, for operators; never fails the probe. */
@Injectable()
export class AgentConnectionHealthIndicator {
  constructor(
    private readonly indicator: HealthIndicatorService,
    private readonly relay: AgentRelayService,
  ) {}

  check(key = 'agentServer'): HealthIndicatorResult {
    return this.indicator.check(key).up({ ...this.relay.status() });
  }
}
