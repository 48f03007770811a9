import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RelayCluster } from '../cluster/relay-cluster.service.js';

/**
 * Redis (RELAY_REDIS_URL only): `check` is down while it is unreachable or refuses writes;
 * `checkReady` only until it was reached once, so a Redis outage does not take every replica
 * out of the load balancer (each answers what needs shared state 503 itself).
 */
@Injectable()
export class RedisHealthIndicator {
  constructor(
    private readonly cluster: RelayCluster,
    private readonly indicator: HealthIndicatorService,
  ) {}

  get enabled(): boolean {
    return this.cluster.enabled;
  }

  check() {
    const redis = this.indicator.check('redis');
    const details = { reachedOnce: this.cluster.reachedOnce };
    const failure = this.cluster.redisUp ? this.cluster.publishError : 'Redis is unreachable';
    return failure === undefined ? redis.up(details) : redis.down({ ...details, message: failure });
  }

  checkReady() {
    const redis = this.indicator.check('redis');
    const details = { reachable: this.cluster.redisUp };
    return this.cluster.reachedOnce
      ? redis.up(details)
      : redis.down({ ...details, message: 'Redis was not reached yet' });
  }
}
