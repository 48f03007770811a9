import { z } from 'zod';
import { setting, unsetIfEmpty, wholeNumberSettings } from '../../config/shared/env-fields.js';
import type { RelayClusterConfig } from './relay-config.js';

/**
 * Running several replicas (`RELAY_REDIS_URL`, `RELAY_REPLICA_URL`, `RELAY_REDIS_TIMEOUT_MS`,
 * `RELAY_SESSION_MOVE_SECONDS`): docs/relay-server.md, "Running several replicas". Messages
 * never echo a value: the Redis URL may hold a password.
 */
const urlWith = (protocols: string[], test: (url: URL) => boolean) => (text: string) => {
  try {
    const url = new URL(text);
    return protocols.includes(url.protocol) && test(url);
  } catch {
    return false;
  }
};

export const relayClusterEnvFields = {
  RELAY_REDIS_URL: setting(
    unsetIfEmpty(
      z
        .string()
        .trim()
        .refine(
          urlWith(['redis:', 'rediss:'], (url) => url.hostname !== ''),
          'RELAY_REDIS_URL must be a redis:// or rediss:// URL with a host',
        ),
    ),
    {
      description: 'The Redis (or Valkey) that several replicas share',
      secret: true,
      unset: 'one replica',
    },
  ),
  RELAY_REPLICA_URL: setting(
    unsetIfEmpty(
      z
        .string()
        .trim()
        .refine(
          urlWith(
            ['http:', 'https:'],
            (url) =>
              url.port !== '' && (url.pathname === '/' || url.pathname === '') && !url.search,
          ),
          'RELAY_REPLICA_URL must be http(s)://<host>:<port> (no path): how other replicas reach this one',
        ),
    ),
    {
      description: 'How other replicas reach this one, `http(s)://<host>:<port>`',
      unset: 'loopback',
    },
  ),
  ...wholeNumberSettings({
    RELAY_REDIS_TIMEOUT_MS: [50, 60_000, 1000, 'A Redis command unanswered by then fails (503)'],
    RELAY_SESSION_MOVE_SECONDS: [1, 300, 10, "Wait for a gone replica's session to move, else 503"],
  }),
};

export function clusterConfig(env: {
  RELAY_REDIS_URL?: string | undefined;
  RELAY_REPLICA_URL?: string | undefined;
  RELAY_REDIS_TIMEOUT_MS: number;
  RELAY_SESSION_MOVE_SECONDS: number;
}): RelayClusterConfig | undefined {
  if (env.RELAY_REDIS_URL === undefined) return undefined;
  return {
    redisUrl: env.RELAY_REDIS_URL,
    replicaUrl: env.RELAY_REPLICA_URL?.replace(/\/$/, ''),
    redisTimeoutMs: env.RELAY_REDIS_TIMEOUT_MS,
    sessionMoveMs: env.RELAY_SESSION_MOVE_SECONDS * 1000,
  };
}
