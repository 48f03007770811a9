import type { INestApplicationContext } from '@nestjs/common';
import { getToken } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import type { AppConfig } from '../../config/app-config.js';
import type { ListenerLimits } from './run-http-app.js';

/** Connection caps; the probe ports' own, so one address's idle connections cannot starve them. */
export function appConnectionLimits(
  app: INestApplicationContext,
  config: AppConfig,
): ListenerLimits {
  const counter = app.get<Counter<'reason'>>(getToken('http_connections_refused_total'));
  const { maxConnections, maxConnectionsPerAddress, keepAliveTimeoutMs, probe } =
    config.connections;
  return {
    limits: { maxConnections, maxConnectionsPerAddress, keepAliveTimeoutMs },
    probeLimits: { maxConnections, keepAliveTimeoutMs, ...probe },
    refused: (reason) => counter.inc({ reason }),
  };
}
