import type { z } from 'zod';
import { setting, wholeNumberSettings } from '../../config/shared/env-fields.js';
import { urlSetting } from './secure-url.js';

/** Running several replicas: docs/relay-server.md, "Running several replicas". */
export const relayClusterEnvFields = {
  RELAY_REDIS_URL: setting(
    urlSetting(
      (url) => ['redis:', 'rediss:'].includes(url.protocol) && url.hostname !== '',
      'RELAY_REDIS_URL must be a redis:// or rediss:// URL with a host',
    ),
    {
      description: 'The Redis (or Valkey) that several replicas share',
      secret: true,
      unset: 'one replica',
    },
  ),
  RELAY_REPLICA_URL: setting(
    urlSetting(
      (url) =>
        ['http:', 'https:'].includes(url.protocol) &&
        url.port !== '' &&
        (url.pathname === '/' || url.pathname === '') &&
        !url.search,
      'RELAY_REPLICA_URL must be http(s)://<host>:<port> (no path): how other replicas reach this one',
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

export function clusterConfig(env: z.infer<z.ZodObject<typeof relayClusterEnvFields>>) {
  if (env.RELAY_REDIS_URL === undefined) return undefined;
  return {
    redisUrl: env.RELAY_REDIS_URL,
    // undefined: http(s)://127.0.0.1:<bound port>.
    replicaUrl: env.RELAY_REPLICA_URL?.replace(/\/$/, ''),
    redisTimeoutMs: env.RELAY_REDIS_TIMEOUT_MS,
    // How long a request of a session whose replica went waits for it to move; then 503.
    sessionMoveMs: env.RELAY_SESSION_MOVE_SECONDS * 1000,
  };
}
