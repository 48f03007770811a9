import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisAvailable, TestRedis } from '../../../test/support/redis.js';
import type { AgentRegistry } from '../agents/agent-registry.service.js';
import type { SessionStore } from '../mcp/sessions/session-store.service.js';
import { ClusterStore } from './cluster-store.js';
import { SessionMover } from './session-mover.js';

/**
 * SessionMover against a real redis-server: a session whose replica (A) went while no replica
 * holds a connection of its agent, so its requests wait on B for one to come.
 */
const A = 'http://10.0.0.1:8443';
const B = 'http://10.0.0.2:8443';
const WAIT_MS = 5000;
const record = { client: 'me', agent: 'shop', server: 'pears' };

describe.skipIf(!redisAvailable)('SessionMover waiting for a home', () => {
  const server = new TestRedis();
  let redis: Redis;
  let mover: SessionMover;

  beforeAll(async () => {
    await server.start();
    redis = new Redis(server.url);
    const store = new ClusterStore(redis, 60_000);
    await store.publish(A, new Map(), new Map([['s1', record]]));
    mover = new SessionMover({
      store,
      replica: B,
      // No connection of the agent on any replica: it is reconnecting.
      registry: { serving: () => [] } as unknown as AgentRegistry,
      sessions: {} as SessionStore,
      waitMs: WAIT_MS,
      maxWaitingPerClient: 1,
      suspected: (url) => url === A,
    });
  });

  afterAll(async () => {
    redis.disconnect();
    await server.close();
  });

  /** Places a request of the session; resolves with the placement and how long it took. */
  async function timedPlace(signal: AbortSignal): Promise<{ kind: string; ms: number }> {
    const since = Date.now();
    const placement = await mover.place({ ...record, sessionId: 's1' }, signal);
    return { kind: placement.kind, ms: Date.now() - since };
  }

  it('stops waiting when its client hangs up', async () => {
    const hungUp = new AbortController();
    const placed = timedPlace(hungUp.signal);
    setTimeout(() => hungUp.abort(), 100);
    const { kind, ms } = await placed;
    expect(kind).toBe('waiting');
    expect(ms).toBeLessThan(WAIT_MS / 2);
  });

  it("lets no more of a client's requests wait than its in-flight cap", async () => {
    const first = new AbortController();
    const waiting = timedPlace(first.signal);
    // The first one is polling now: past one look at Redis.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await timedPlace(new AbortController().signal);
    expect(second.kind).toBe('waiting');
    expect(second.ms).toBeLessThan(WAIT_MS / 2);
    first.abort();
    expect((await waiting).kind).toBe('waiting');
  });
});
