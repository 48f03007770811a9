import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../config/shared/config-error.js';
import { loadRelayConfig } from './load-relay-config.js';

const entry = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex')}`;
const valid = {
  RELAY_AGENTS: JSON.stringify({ shop: entry('a'.repeat(40)) }),
  RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry('c'.repeat(40)), agents: ['shop'] } }),
};

function problems(env: Record<string, string>): string[] {
  try {
    loadRelayConfig({ ...valid, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('the relay cluster settings', () => {
  it('keep one replica without RELAY_REDIS_URL', () => {
    expect(loadRelayConfig(valid).cluster).toBeUndefined();
  });

  it('read the Redis URL, the replica URL and the timeout', () => {
    const config = loadRelayConfig({
      ...valid,
      RELAY_REDIS_URL: 'rediss://:pw@redis.example:6380/2',
      RELAY_REPLICA_URL: 'http://10.0.0.7:8443/',
    });
    expect(config.cluster).toEqual({
      redisUrl: 'rediss://:pw@redis.example:6380/2',
      replicaUrl: 'http://10.0.0.7:8443',
      redisTimeoutMs: 1000,
      sessionMoveMs: 10_000,
    });
  });

  it.each([
    ['RELAY_REDIS_URL', 'http://secret@redis:6379', 'RELAY_REDIS_URL must be a redis://'],
    ['RELAY_REDIS_URL', 'not a url :secret', 'RELAY_REDIS_URL must be a redis://'],
    ['RELAY_REPLICA_URL', 'http://10.0.0.7', 'RELAY_REPLICA_URL must be http(s)://<host>:<port>'],
    ['RELAY_REPLICA_URL', 'http://10.0.0.7:8443/x', 'RELAY_REPLICA_URL must be http(s)://'],
    ['RELAY_REDIS_TIMEOUT_MS', '10', 'RELAY_REDIS_TIMEOUT_MS must be a whole number from 50'],
    ['RELAY_SESSION_MOVE_SECONDS', '0', 'RELAY_SESSION_MOVE_SECONDS must be a whole number from 1'],
  ])('refuse %s=%s without echoing it', (name, value, message) => {
    const found = problems({ [name]: value });
    expect(found.join('\n')).toContain(message);
    expect(found.join('\n')).not.toContain('secret');
  });
});
