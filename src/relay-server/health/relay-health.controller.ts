import { Controller, Get, Inject } from '@nestjs/common';
import {
  HealthCheckService,
  type HealthCheckResult,
  HealthIndicatorService,
} from '@nestjs/terminus';
import { HealthProbe } from '../../common/http/health-probe.decorator.js';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import { RelayCluster } from '../cluster/relay-cluster.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';

/** Probes, on RELAY_HEALTH_CHECK_PORT only (the port is the boundary, no token). */
@Controller('health')
export class RelayHealthController {
  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    private readonly registry: AgentRegistry,
    private readonly cluster: RelayCluster,
  ) {}

  @Get()
  @HealthProbe()
  check(): Promise<HealthCheckResult> {
    const redis = this.cluster.enabled ? [() => this.redis()] : [];
    return this.health.check([() => this.agents(), ...redis]);
  }

  @Get('ready')
  @HealthProbe()
  ready(): Promise<HealthCheckResult> {
    const redis = this.cluster.enabled ? [() => this.redisReady()] : [];
    return this.health.check([() => this.agents(), ...redis]);
  }

  @Get('live')
  @HealthProbe()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  // The configured agents and their connections, names and counts only. Always "up": a missing
  // agent is the agent's problem, which restarting the relay would not fix.
  private agents() {
    const agents = Object.fromEntries(
      this.config.agents.map(({ name }) => {
        const connections = this.registry.of(name).length;
        return [name, { connections, serversUp: this.registry.serversUp(name).sort() }];
      }),
    );
    return this.indicator.check('agents').up({ agents });
  }

  /** Redis (RELAY_REDIS_URL only): down while it is unreachable or refuses writes. */
  private redis() {
    const redis = this.indicator.check('redis');
    const details = { reachedOnce: this.cluster.reachedOnce };
    const failure = this.cluster.redisUp ? this.cluster.publishError : 'Redis is unreachable';
    return failure === undefined ? redis.up(details) : redis.down({ ...details, message: failure });
  }

  // Down only until Redis was reached once, so an outage does not take every replica out of
  // the load balancer (each answers what needs shared state 503 itself).
  private redisReady() {
    const redis = this.indicator.check('redis');
    const details = { reachable: this.cluster.redisUp };
    return this.cluster.reachedOnce
      ? redis.up(details)
      : redis.down({ ...details, message: 'Redis was not reached yet' });
  }
}
