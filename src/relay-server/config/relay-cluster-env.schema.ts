import { z } from 'zod';
import type { RelayClusterConfig } from './relay-config.js';

/**
 * Running several replicas (`RELAY_REDIS_URL`, `RELAY_REPLICA_URL`, `RELAY_REDIS_TIMEOUT_MS`,
 * `RELAY_SESSION_MOVE_SECONDS`): docs/relay-server.md, "Running several replicas". Messages
 * never echo a value: the Redis URL may hold a password.
 */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const urlWith = (protocols: string[], test: (url: URL) => boolean) => (text: string) => {
  try {
    const url = new URL(text);
    return protocols.includes(url.protocol) && test(url);
  } catch {
    return false;
  }
};

export const relayClusterEnvFields = {
  RELAY_REDIS_URL: optional(
    z
      .string()
      .trim()
      .refine(
        urlWith(['redis:', 'rediss:'], (url) => url.hostname !== ''),
        'RELAY_REDIS_URL must be a redis:// or rediss:// URL with a host',
      ),
  ),
  RELAY_REPLICA_URL: optional(
    z
      .string()
      .trim()
      .refine(
        urlWith(
          ['http:', 'https:'],
          (url) => url.port !== '' && (url.pathname === '/' || url.pathname === '') && !url.search,
        ),
        'RELAY_REPLICA_URL must be http(s)://<host>:<port> (no path): how other replicas reach this one',
      ),
  ),
  RELAY_REDIS_TIMEOUT_MS: optional(
    z
      .string()
      .trim()
      .regex(/^\d{1,6}$/, 'RELAY_REDIS_TIMEOUT_MS must be a whole number from 50 to 60000')
      .transform(Number)
      .pipe(
        z
          .number()
          .min(50, 'RELAY_REDIS_TIMEOUT_MS must be a whole number from 50 to 60000')
          .max(60_000, 'RELAY_REDIS_TIMEOUT_MS must be a whole number from 50 to 60000'),
      ),
  ).default(1000),
  RELAY_SESSION_MOVE_SECONDS: optional(
    z
      .string()
      .trim()
      .regex(/^\d{1,3}$/, 'RELAY_SESSION_MOVE_SECONDS must be a whole number from 1 to 300')
      .transform(Number)
      .pipe(
        z
          .number()
          .min(1, 'RELAY_SESSION_MOVE_SECONDS must be a whole number from 1 to 300')
          .max(300, 'RELAY_SESSION_MOVE_SECONDS must be a whole number from 1 to 300'),
      ),
  ).default(10),
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
