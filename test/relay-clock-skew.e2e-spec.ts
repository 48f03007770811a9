import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logLines, waitFor } from './fixtures/mcp-e2e-support.js';
import { firstText } from './fixtures/relay-e2e-support.js';
import { newToken, ROOT } from './support/app-process.js';
import { redisAvailable } from './support/redis.js';
import { RelayClusterUnderTest } from './support/relay-cluster.js';
import { sha256Entry } from './support/relay-process.js';

/**
 * Two relay replicas on a real Redis; the second runs with its clock 20 s behind (a node whose
 * NTP failed) and holds the agent `shop`'s connection. The first still passes requests to it.
 */
const tokens = { shop: newToken(), alice: newToken() };
const cluster = new RelayClusterUnderTest();
const { relays } = cluster;
const CLOCK_BEHIND = `--import=${join(ROOT, 'test/fixtures/clock-ahead.mjs')}`;

const relayEnv = () => ({
  RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(tokens.shop) }),
  RELAY_CLIENTS: JSON.stringify({
    alice: { tokens: sha256Entry(tokens.alice), agents: ['shop'] },
  }),
});

beforeAll(
  () =>
    cluster.start({
      env: (index) => (index === 1 ? { ...relayEnv(), CLOCK_SHIFT_MS: '-20000' } : relayEnv()),
      nodeArgs: (index) => (index === 1 ? [CLOCK_BEHIND] : []),
      agentToken: tokens.shop,
    }),
  60_000,
);

afterAll(() => cluster.stop());

describe.skipIf(!redisAvailable)('relay replicas whose clocks differ (e2e)', () => {
  it('reaches an agent through a replica whose clock is 20 s behind, and logs the skew', async () => {
    const [first, behind] = relays;
    if (!first || !behind) throw new Error('no relays');
    const client = new Client({ name: 'relay-clock-skew', version: '1.0.0' });
    const url = new URL(`http://127.0.0.1:${first.port}/mcp/shop/echo`);
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${tokens.alice}` } },
    });
    await client.connect(transport);
    try {
      const answer = await client.callTool({ name: 'whoami', arguments: {} }, { timeout: 5000 });
      expect(firstText(answer)).toBe('b');
    } finally {
      await client.close();
    }
    const skew = await waitFor(
      () => logLines(behind.output(), (l) => String(l.msg).includes('clock is off')).at(0),
      'the skew line',
    );
    expect(skew).toMatchObject({ aheadOfRedisSeconds: -20 });
  });
});
