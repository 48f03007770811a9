import { Controller, Get } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { HealthProbe } from '../../common/http/health-probe.decorator.js';
import { AgentsHealthIndicator } from './agents.health.js';

/** Probes, served only on RELAY_HEALTH_CHECK_PORT (no token: the port is the boundary). */
@Controller('health')
export class RelayHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly agents: AgentsHealthIndicator,
  ) {}

  @Get()
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.agents.check()]);
  }

  @Get('ready')
  @HealthProbe()
  ready(): Promise<HealthCheckResult> {
    return this.check();
  }

  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }
}
