import pino from 'pino';
import { Counter, Gauge, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { waitFor } from '../../../test/fixtures/mcp-e2e-support.js';
import { redisAvailable, TestRedis } from '../../../test/support/redis.js';
import { sha256Entry } from '../../../test/support/relay-process.js';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import type { AgentConnection } from '../agents/agent-connection.js';
import { loadRelayConfig } from '../config/load-relay-config.js';
import { SessionStore } from '../mcp/sessions/session-store.service.js';
import { ClusterStore } from './cluster-store.js';
import { RelayCluster, tagOf } from './relay-cluster.service.js';

describe("a replica's tag in MRTR request states", () => {
  it('is short, stable and distinct per replica', () => {
    const url = 'http://10.0.0.7:8443';
    expect(tagOf(url)).toMatch(/^[\w-]{8}$/);
    expect(tagOf(url)).toBe(tagOf(url));
    expect(tagOf('http://10.0.0.8:8443')).not.toBe(tagOf(url));
  });
});

describe.skipIf(!redisAvailable)("a replica's refreshes of its Redis entries", () => {
  const redis = new TestRedis();
  let cluster: RelayCluster;
  let registry: AgentRegistry;
  let publishes: MockInstance<ClusterStore['publish']>;
  /** How many session records each publish carried, in order. */
  const published = () => publishes.mock.calls.map(([, , sessions]) => sessions.size);

  beforeAll(async () => {
    await redis.start();
    const config = loadRelayConfig({
      RELAY_REDIS_URL: redis.url,
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry('shop-token') }),
      RELAY_CLIENTS: JSON.stringify({ me: { tokens: sha256Entry('me-token'), agents: ['shop'] } }),
    });
    const registers = [new Registry()];
    const gauge = (name: string, labelNames: string[] = []) =>
      new Gauge({ name, help: name, labelNames, registers });
    registry = new AgentRegistry(config, gauge('connections', ['agent']));
    const sessions = new SessionStore(config);
    sessions.create('me', 'shop');
    const failures = new Counter({
      name: 'failures',
      help: 'f',
      labelNames: ['reason'],
      registers,
    });
    cluster = new RelayCluster(
      config,
      pino({ level: 'silent' }),
      registry,
      sessions,
      gauge('up'),
      failures,
    );
    publishes = vi.spyOn(ClusterStore.prototype, 'publish');
    await cluster.start(8443);
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    await cluster?.onModuleDestroy();
    await redis.close();
  });

  it('writes the sessions once Redis is reached, and only the agents when they change', async () => {
    await waitFor(() => published().length > 0, 'the first refresh');
    expect(published()).toEqual([1]);
    registry.emit('disconnect', { agent: 'shop' } as AgentConnection);
    await waitFor(() => published().length > 1, 'a refresh for the change');
    expect(published()).toEqual([1, 0]);
    cluster.refreshSoon();
    await waitFor(() => published().length > 2, 'a full refresh');
    expect(published()).toEqual([1, 0, 1]);
  });
});
