import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RelayCluster } from '../cluster/relay-cluster.service.js';

/**
 * Redis, the replicas' shared state (RELAY_REDIS_URL only). `check` is down while Redis is
 * unreachable or refuses this replica's writes (full); `checkReady` only until it was reached once: a replica that lost Redis keeps
 * its traffic and answers what needs shared state with 503 + Retry-After itself, so that an
 * outage of Redis does not take every replica out of the load balancer at once.
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
