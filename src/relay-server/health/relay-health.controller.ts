import { Controller, Get } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { HealthProbe } from '../../common/http/health-probe.decorator.js';
import { AgentsHealthIndicator } from './agents.health.js';
import { RedisHealthIndicator } from './redis.health.js';

/** Probes, on RELAY_HEALTH_CHECK_PORT only (the port is the boundary, no token). */
@Controller('health')
export class RelayHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly agents: AgentsHealthIndicator,
    private readonly redis: RedisHealthIndicator,
  ) {}

  @Get()
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    const redis = this.redis.enabled ? [() => this.redis.check()] : [];
    return this.health.check([() => this.agents.check(), ...redis]);
  }

  @Get('ready')
  @HealthProbe()
  ready(): Promise<HealthCheckResult> {
    const redis = this.redis.enabled ? [() => this.redis.checkReady()] : [];
    return this.health.check([() => this.agents.check(), ...redis]);
  }

  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }
}
