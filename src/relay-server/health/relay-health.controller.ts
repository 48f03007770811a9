import { Controller, Get } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { HealthProbe } from '../../common/http/health-probe.decorator.js';
import { AgentsHealthIndicator } from './agents.health.js';
import { RedisHealthIndicator } from './redis.health.js';

/**
 * Probes, served only on RELAY_HEALTH_CHECK_PORT (no token: the port is the boundary). With
 * RELAY_REDIS_URL, `/health` shows Redis's state now and `/health/ready` waits for Redis to
 * have been reached once (redis.health.ts); `/health/live` never looks at Redis.
 */
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
