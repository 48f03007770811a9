import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../config/shared/config-error.js';
import { loadRelayConfig } from './load-relay-config.js';

const entry = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex')}`;
const agentToken = 'a'.repeat(40);
const clientToken = 'c'.repeat(40);
const valid = {
  RELAY_AGENTS: JSON.stringify({ shop: entry(agentToken) }),
  RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry(clientToken), agents: ['shop'] } }),
};

function problems(env: Record<string, string>): string[] {
  try {
    loadRelayConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadRelayConfig', () => {
  it('gives defaults and hashed tokens for a minimal valid environment', () => {
    const config = loadRelayConfig(valid);
    expect(config).toMatchObject({
      http: { host: '0.0.0.0', port: 8443 },
      health: { port: 8081 },
      metrics: { port: 9091 },
      basePath: '',
      tls: undefined,
      maxFrameBytes: 4 * 1024 * 1024,
      requestTimeoutMs: 70_000,
      maxInFlightPerAgent: 256,
      maxInFlightPerClient: 32,
      agentPingMs: 30_000,
      sessionIdleMs: 3_600_000,
      maxSessionsPerClient: 100,
      maxNewSessionsPerClientPerMinute: 120,
      maxStreamBufferBytesPerClient: 16 * 1024 * 1024,
      maxStreamBufferBytes: 128 * 1024 * 1024,
      streamReplayBytes: 64 * 1024,
      connections: { maxConnections: 2048, maxConnectionsPerAddress: 256 },
      tlsHandshakeTimeoutMs: 15_000,
      agentBudgets: { maxConnectionsPerAgent: 16, maxInventoryBytesPerAgent: 16 * 1024 * 1024 },
      agentRates: {
        framesPerSecond: 1000,
        bytesPerSecond: 4 * 1024 * 1024,
        inventoryBytesPerMinute: 16 * 1024 * 1024,
      },
    });
    expect(config.agents).toEqual([
      { name: 'shop', tokenDigests: [createHash('sha256').update(agentToken).digest()] },
    ]);
    expect(config.clients[0]?.agents).toEqual(new Set(['shop']));
  });

  it('takes 0 for every port (any free port, logged at start): no "must differ" for the 0s', () => {
    const config = loadRelayConfig({
      ...valid,
      RELAY_PORT: '0',
      RELAY_HEALTH_CHECK_PORT: '0',
      RELAY_METRICS_PORT: '0',
    });
    expect([config.http.port, config.health.port, config.metrics.port]).toEqual([0, 0, 0]);
  });

  it('reads the TLS certificate and key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'relay-tls-'));
    writeFileSync(join(dir, 'cert.pem'), 'CERT');
    writeFileSync(join(dir, 'key.pem'), 'KEY');
    const config = loadRelayConfig({
      ...valid,
      RELAY_TLS_CERT_FILE: join(dir, 'cert.pem'),
      RELAY_TLS_KEY_FILE: join(dir, 'key.pem'),
    });
    expect(config.tls).toEqual({ cert: 'CERT', key: 'KEY' });
  });

  it.each([
    [{}, 'RELAY_AGENTS is required: a JSON object mapping agent names to token entries'],
    [{ ...valid, RELAY_AGENTS: '{nope' }, 'RELAY_AGENTS must be a JSON object'],
    [
      { ...valid, RELAY_AGENTS: JSON.stringify({ 'bad/name': entry(agentToken) }) },
      'RELAY_AGENTS.bad/name: agent names are 1 to 64 of A-Z a-z 0-9 . _ - and start with a letter or digit',
    ],
    [
      { ...valid, RELAY_AGENTS: JSON.stringify({ shop: '' }) },
      'RELAY_AGENTS.shop must list at least one token entry',
    ],
    [
      { ...valid, RELAY_AGENTS: JSON.stringify({ shop: 'too-short' }) },
      'RELAY_AGENTS.shop entry 1 must be sha256:<64 hex> or a plain token of at least 32 characters without whitespace',
    ],
    [
      {
        ...valid,
        RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry(clientToken), agents: [] } }),
      },
      'RELAY_CLIENTS.alice.agents must name at least one agent',
    ],
    [
      {
        ...valid,
        RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry(clientToken), agents: ['lab'] } }),
      },
      'RELAY_CLIENTS.alice.agents names "lab", which is not in RELAY_AGENTS',
    ],
    [
      {
        ...valid,
        RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry(agentToken), agents: ['shop'] } }),
      },
      'RELAY_CLIENTS.alice.tokens has a token that RELAY_AGENTS.shop also has: a token belongs to one agent or one client',
    ],
    [
      {
        ...valid,
        RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry(clientToken), agent: ['shop'] } }),
      },
      'RELAY_CLIENTS.alice.agent is not a known key',
    ],
    [{ ...valid, RELAY_BASE_PATH: '/relay/' }, 'RELAY_BASE_PATH must be a path like /relay'],
    [{ ...valid, RELAY_PORT: '9091' }, 'RELAY_METRICS_PORT must differ from RELAY_PORT'],
    [{ ...valid, RELAY_MAX_FRAME_BYTES: '10' }, 'RELAY_MAX_FRAME_BYTES must be a whole number'],
    [
      { ...valid, RELAY_MAX_FRAME_BYTES: String(4 * 1024 * 1024 + 1) },
      'RELAY_MAX_FRAME_BYTES must be a whole number',
    ],
    [{ ...valid, RELAY_TLS_KEY_FILE: '/k.pem' }, 'must be set together'],
    [
      { ...valid, RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT: '1048576' },
      'RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT must be at least RELAY_MAX_FRAME_BYTES',
    ],
    [
      {
        ...valid,
        RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT: '8388608',
        RELAY_MAX_STREAM_BUFFER_BYTES: '4194304',
      },
      'RELAY_MAX_STREAM_BUFFER_BYTES must be at least RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT',
    ],
    [
      {
        ...valid,
        RELAY_TLS_CERT_FILE: '/nonexistent/c.pem',
        RELAY_TLS_KEY_FILE: '/nonexistent/k.pem',
      },
      'RELAY_TLS_CERT_FILE: /nonexistent/c.pem cannot be read (ENOENT)',
    ],
  ])('reports %j as %s', (env, message) => {
    expect(problems(env).join('\n')).toContain(message);
  });

  it.each([
    [
      { RELAY_TLS_KEY_FILE: '/k.pem' },
      'RELAY_TLS_CERT_FILE and RELAY_TLS_KEY_FILE must be set together',
    ],
    [
      { RELAY_TLS_CERT_FILE: '/c.pem' },
      'RELAY_TLS_CERT_FILE and RELAY_TLS_KEY_FILE must be set together',
    ],
    // Used for OAuth alone: without an issuer it would be ignored without a word.
    [
      { RELAY_PUBLIC_URL: 'https://relay.example.com/relay' },
      'RELAY_OAUTH_ISSUER is required when RELAY_PUBLIC_URL is set (the URL is used for OAuth only)',
    ],
  ])('refuses half a pair in one sentence: %j', (overrides, message) => {
    expect(problems({ ...valid, ...overrides })).toEqual([message]);
  });

  it('lists every problem at once, and never a token', () => {
    const secret = 's'.repeat(10);
    const found = problems({
      RELAY_PORT: 'x',
      RELAY_AGENTS: JSON.stringify({ shop: secret }),
      RELAY_CLIENTS: JSON.stringify({ alice: { tokens: 'sha256:1', agents: ['shop'] } }),
    });
    expect(found).toHaveLength(3);
    expect(found.join('\n')).not.toContain(secret);
  });
});
