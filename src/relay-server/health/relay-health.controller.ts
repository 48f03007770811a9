import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { AgentsHealthIndicator } from './agents.health.js';

/** Probes, served only on RELAY_HEALTH_CHECK_PORT (no token: the port is the boundary). */
@Controller('health')
export class RelayHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly agents: AgentsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.agents.check()]);
  }

  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.check();
  }

  @Get('live')
  @HealthCheck()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }
}
