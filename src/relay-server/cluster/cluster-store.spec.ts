import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisAvailable, TestRedis } from '../../../test/support/redis.js';
import { ClusterStore } from './cluster-store.js';

/** ClusterStore against a real redis-server: what replicas read and write about sessions. */
const SESSION_TTL_MS = 60_000;
const A = 'http://10.0.0.1:8443';
const B = 'http://10.0.0.2:8443';
const record = { client: 'me', agent: 'shop', server: 'pears' };

describe.skipIf(!redisAvailable)('ClusterStore sessions', () => {
  const server = new TestRedis();
  let redis: Redis;
  let store: ClusterStore;

  beforeAll(async () => {
    await server.start();
    redis = new Redis(server.url);
    store = new ClusterStore(redis, SESSION_TTL_MS);
  });

  afterAll(async () => {
    redis.disconnect();
    await server.close();
  });

  /** A opened session `id`; B took it over (A froze); the client then ended it through B. */
  async function endedOnB(id: string): Promise<void> {
    await store.publish(A, new Map(), new Map([[id, record]]));
    const seen = await store.session(id);
    if (!seen || seen === 'refilling') throw new Error('the record A published is missing');
    expect(await store.moveSession(id, seen, B)).toBe(true);
    await store.forgetSession(id, B);
  }

  it('keeps an ended session ended when the replica that held it comes back', async () => {
    await endedOnB('s1');
    // A thaws and publishes what it still holds: it must let the session go, not revive it.
    expect(await store.publish(A, new Map(), new Map([['s1', record]]))).toEqual(['s1']);
    expect(await store.session('s1')).toBeUndefined();
  });

  it('lets an ended session mark expire with the record it replaced', async () => {
    await endedOnB('s2');
    const left = await redis.pttl('relay:session:s2');
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(SESSION_TTL_MS);
  });

  it('ends no session for a replica that does not own it', async () => {
    await store.publish(A, new Map(), new Map([['s3', record]]));
    await store.forgetSession('s3', B);
    expect(await store.session('s3')).toMatchObject({ record: { owner: A } });
  });

  it.each([
    ['an owner that is no URL', JSON.stringify({ ...record, owner: 'x', until: 1 })],
    ['an owner of another scheme', JSON.stringify({ ...record, owner: 'file:///x', until: 1 })],
    ['a number for an owner', JSON.stringify({ ...record, owner: 42, until: 1 })],
    ['no JSON at all', 'garbage'],
  ])('refuses a session record with %s', async (_case, text) => {
    await redis.set('relay:session:s4', text);
    await expect(store.session('s4')).rejects.toThrow(/malformed/);
  });

  it('says a missing record may yet come back only while Redis refills', async () => {
    await redis.flushall();
    expect(await store.session('s5')).toBe('refilling');
    await store.peerSecret();
    expect(await store.session('s5')).toBe('refilling');
    await redis.del('relay:refilling');
    expect(await store.session('s5')).toBeUndefined();
  });

  it('never shows a new secret without the refill mark, to a replica reading meanwhile', async () => {
    const otherRedis = new Redis(server.url);
    const other = new ClusterStore(otherRedis, SESSION_TTL_MS);
    const reads: unknown[] = [];
    for (let round = 0; round < 20; round++) {
      await redis.flushall();
      const reading = (async () => {
        for (let i = 0; i < 20; i++) reads.push(await other.session('s6'));
      })();
      await Promise.all([store.peerSecret(), reading]);
    }
    otherRedis.disconnect();
    expect(reads.filter((read) => read !== 'refilling')).toEqual([]);
  });
});
