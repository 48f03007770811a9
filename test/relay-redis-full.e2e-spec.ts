import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { newToken } from './support/app-process.js';
import { redisAvailable } from './support/redis.js';
import { initializeMessage, RelayClusterUnderTest } from './support/relay-cluster.js';
import { type RunningRelay, sha256Entry } from './support/relay-process.js';

/**
 * A relay replica on a real Redis: what one client's session churn may leave there, and what
 * the replica says once Redis is full (`maxmemory` reached, `noeviction`: writes refused).
 */
const tokens = { shop: newToken(), alice: newToken(), bob: newToken() };
const NEW_SESSIONS_PER_MINUTE = 5;
const cluster = new RelayClusterUnderTest();
const { redis } = cluster;
let directory: Redis;
let relay: RunningRelay;

beforeAll(async () => {
  if (!redisAvailable) return;
  const env = {
    RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(tokens.shop) }),
    RELAY_CLIENTS: JSON.stringify({
      alice: { tokens: sha256Entry(tokens.alice), agents: ['shop'] },
      bob: { tokens: sha256Entry(tokens.bob), agents: ['shop'] },
    }),
    RELAY_MAX_NEW_SESSIONS_PER_CLIENT_PER_MINUTE: String(NEW_SESSIONS_PER_MINUTE),
  };
  await cluster.start({ env: () => env }, 1);
  relay = cluster.holder;
  directory = new Redis(redis.url);
}, 60_000);

afterAll(async () => {
  directory?.disconnect();
  await cluster.stop();
});

/** POST or DELETE on the aggregate endpoint of `shop` (the relay answers `initialize` itself). */
async function mcp(token: string, method: 'POST' | 'DELETE', session?: string) {
  const response = await fetch(`http://127.0.0.1:${relay.port}/mcp/shop`, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(session && { 'Mcp-Session-Id': session }),
    },
    body: method === 'POST' ? JSON.stringify(initializeMessage()) : undefined,
  });
  const text = await response.text();
  return { status: response.status, session: response.headers.get('mcp-session-id'), text };
}

const health = async () => {
  const response = await fetch(`${relay.healthUrl}/health`);
  const body = (await response.json()) as { details?: { redis?: Record<string, unknown> } };
  return { status: response.status, redis: body.details?.redis };
};

describe.skipIf(!redisAvailable)('a relay replica and a Redis that fills (e2e)', () => {
  it("keeps an ended session's mark in Redis a minute, not the session idle time", async () => {
    const { status, text, session } = await mcp(tokens.bob, 'POST');
    // Without a session id the DELETE would be a 400 that hides why the POST failed.
    expect(status, text).toBe(200);
    expect((await mcp(tokens.bob, 'DELETE', session!)).status).toBe(204);
    const key = `relay:session:${session}`;
    await waitFor(async () => (await directory.get(key)) === '{"owner":""}', 'the tombstone');
    const ttl = await directory.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it("bounds one client's new sessions per minute; others still open theirs", async () => {
    for (let i = 0; i < NEW_SESSIONS_PER_MINUTE; i++) {
      const opened = await mcp(tokens.alice, 'POST');
      expect(opened.status).toBe(200);
      expect((await mcp(tokens.alice, 'DELETE', opened.session!)).status).toBe(204);
    }
    const refused = await mcp(tokens.alice, 'POST');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: -32005 } });
    expect((await mcp(tokens.bob, 'POST')).status).toBe(200);
    expect(
      await metric(relay.metricsUrl, 'relay_mcp_requests_total{agent="shop",outcome="overloaded"}'),
    ).toBe(1);
  });

  it('reports in /health and the metrics a publish that a full Redis refuses, and recovers', async () => {
    await directory.config('SET', 'maxmemory', '1');
    try {
      await waitFor(async () => (await health()).status === 503, '/health down');
      const { redis: detail } = await health();
      expect(detail).toMatchObject({
        status: 'down',
        message: expect.stringContaining('OOM') as unknown,
      });
      expect(await metric(relay.metricsUrl, 'relay_redis_up')).toBe(0);
      expect(
        await metric(relay.metricsUrl, 'relay_redis_publish_failures_total{reason="OOM"}'),
      ).toBeGreaterThan(0);
      expect((await mcp(tokens.bob, 'POST')).status).toBe(503);
    } finally {
      await directory.config('SET', 'maxmemory', '0');
    }
    await waitFor(async () => (await health()).status === 200, '/health up again');
    expect(await metric(relay.metricsUrl, 'relay_redis_up')).toBe(1);
  });
});
