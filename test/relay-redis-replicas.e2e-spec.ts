import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EchoAgent } from './fixtures/relay-server/echo-agent.js';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { firstText, inspectorCli } from './fixtures/relay-e2e-support.js';
import { newToken } from './support/app-process.js';
import { callInLoops, type LoopFailure } from './support/call-loops.js';
import { closedPort } from './support/closed-port.js';
import { freshConnectionFetch } from './support/plain-fetch.js';
import { redisAvailable, TestRedis } from './support/redis.js';
import { refreshed } from './support/relay-cluster.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { RoundRobinProxy } from './support/round-robin-proxy.js';

/**
 * Three relay replicas sharing a real Redis, behind a round-robin TCP proxy written here (no
 * stickiness); two agents (`shop`, `garden`) with two connections each, spread over the
 * replicas by the proxy. Every client request opens a new TCP connection, so consecutive
 * requests of one MCP session reach different replicas.
 */
const tokens = { shop: newToken(), garden: newToken(), orchard: newToken(), alice: newToken() };
const redis = new TestRedis();
const relays: RunningRelay[] = [];
const agents: EchoAgent[] = [];
const clients: Client[] = [];
const proxy = new RoundRobinProxy(() => live().map((r) => r.port));

const relayEnv = () => ({
  RELAY_REDIS_URL: redis.url,
  RELAY_AGENTS: JSON.stringify({
    shop: sha256Entry(tokens.shop),
    garden: sha256Entry(tokens.garden),
    orchard: sha256Entry(tokens.orchard),
  }),
  RELAY_CLIENTS: JSON.stringify({
    alice: { tokens: sha256Entry(tokens.alice), agents: ['shop', 'garden', 'orchard'] },
  }),
});

const health = async (relay: RunningRelay, path = '/health') => {
  const response = await fetch(`${relay.healthUrl}${path}`);
  return { status: response.status, body: (await response.json()) as HealthBody };
};
interface HealthBody {
  details: {
    agents?: { agents: Record<string, { connections: number }> };
    redis?: { status: string };
  };
}
const live = () => relays.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
const connections = async (agent: string, on = live()) => {
  const counts = await Promise.all(
    on.map(async (r) => (await health(r)).body.details.agents?.agents[agent]?.connections ?? 0),
  );
  return counts.reduce((a, b) => a + b, 0);
};
const forwarded = async () => {
  const counts = await Promise.all(
    relays.map((r) => metric(r.metricsUrl, 'relay_forwarded_requests_total{outcome="answered"}')),
  );
  return counts.reduce<number>((a, b) => a + (b ?? 0), 0);
};

/**
 * The official SDK client through the proxy, or straight to the replica on `port`; `modern`
 * pins MCP 2026-07-28 (stateless).
 */
async function connect(path: string, modern = false, port = proxy.port): Promise<Client> {
  const client = new Client(
    { name: 'relay-redis-e2e', version: '1.0.0' },
    modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  const url = new URL(`http://127.0.0.1:${port}/mcp/${path}`);
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: freshConnectionFetch,
    requestInit: { headers: { Authorization: `Bearer ${tokens.alice}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}
const whoami = async (client: Client, name = 'whoami') =>
  firstText(await client.callTool({ name, arguments: {} }));

async function untilSettled(): Promise<void> {
  await waitFor(
    async () =>
      (await connections('shop')) === 2 &&
      (await connections('garden')) === 2 &&
      (await Promise.all(live().map((r) => health(r)))).every((h) => h.status === 200) &&
      // /health is up at Redis's reconnect; the replica reads the peer secret at its refresh.
      (await Promise.all(live().map(refreshed))).every(Boolean),
    'four agent connections, Redis up and a refresh since on every replica',
    30_000,
  );
}

beforeAll(async () => {
  if (!redisAvailable) return;
  await redis.start();
  relays.push(...(await Promise.all([0, 1, 2].map(() => startRelay({ env: relayEnv() })))));
  await proxy.start();
  const agentUrl = () => `ws://127.0.0.1:${proxy.port}/agent/v1/connect`;
  for (const [agent, label] of [
    ['shop', 'shop-a'],
    ['garden', 'garden-a'],
    ['shop', 'shop-b'],
    ['garden', 'garden-b'],
  ] as const) {
    const pod = new EchoAgent(agentUrl, tokens[agent], label);
    agents.push(pod);
    await pod.start();
  }
  await untilSettled();
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  for (const pod of agents) pod.stop();
  await proxy.stop();
  await Promise.all(relays.map((r) => r.stop()));
  await redis.close();
});

describe.skipIf(!redisAvailable)('three relay replicas sharing Redis (e2e)', () => {
  it('serves one 2025-11-25 session through every replica, then ends it (DELETE)', async () => {
    const before = await forwarded();
    const client = await connect('shop/echo');
    const answers = new Set<string>();
    for (let i = 0; i < 6; i++) answers.add(await whoami(client));
    // One session lives on one agent connection, whichever replica the request reaches.
    expect(answers.size).toBe(1);
    expect(['shop-a', 'shop-b']).toContain([...answers][0]);
    expect(await forwarded()).toBeGreaterThanOrEqual(before + 3);
    const transport = client.transport as StreamableHTTPClientTransport;
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    // Ended: every replica now answers 404 for it.
    for (const relay of relays) {
      const response = await fetch(`http://127.0.0.1:${relay.port}/mcp/shop/echo`, {
        method: 'POST',
        headers: postHeaders(sessionId),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(response.status).toBe(404);
    }
  });

  it('reaches both connections of each agent, and delivers GET-stream notifications across replicas', async () => {
    for (const [path, labels] of [
      ['shop/echo', ['shop-a', 'shop-b']],
      ['garden/echo', ['garden-a', 'garden-b']],
    ] as const) {
      const seen = new Set<string>();
      await waitFor(async () => {
        seen.add(await whoami(await connect(path)));
        return seen.size === 2;
      }, `sessions on both ${path} connections`);
      expect([...seen].sort()).toEqual(labels);
    }
    let changes = 0;
    const client = await connect('garden/echo');
    client.setNotificationHandler('notifications/tools/list_changed', () => void changes++);
    // The GET stream is held by the session's replica; the call may go through another.
    await waitFor(async () => {
      await whoami(client, 'changed');
      return changes > 0;
    }, 'list_changed on the GET stream');
  });

  it('serves 2026-07-28 stateless requests and the aggregate endpoint through any replica', async () => {
    const modern = await connect('shop/echo', true);
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    for (let i = 0; i < 3; i++) expect(['shop-a', 'shop-b']).toContain(await whoami(modern));
    const aggregate = await connect('garden');
    for (let i = 0; i < 3; i++) {
      const names = (await aggregate.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['echo__whoami', 'echo__wait']));
    }
    expect(['garden-a', 'garden-b']).toContain(await whoami(aggregate, 'echo__whoami'));
  });

  it('offers the servers of all pods on the aggregate endpoint of every replica', async () => {
    const [first, second] = relays;
    if (!first || !second) throw new Error('no relays');
    // Two pods of one agent with different servers (a rollout), each on a replica of its own.
    const podOn = (relay: RunningRelay, label: string, server: string) =>
      new EchoAgent(() => `ws://127.0.0.1:${relay.port}/agent/v1/connect`, tokens.orchard, label, [
        server,
      ]);
    const pods = [podOn(first, 'orchard-a', 'apples'), podOn(second, 'orchard-b', 'pears')];
    const directory = new Redis(redis.url);
    try {
      for (const pod of pods) await pod.start();
      await waitFor(async () => {
        const entries = Object.values(await directory.hgetall('relay:agent:orchard'));
        const servers = entries.flatMap(
          (text) => (JSON.parse(text) as { servers: string[] }).servers,
        );
        return servers.includes('apples') && servers.includes('pears');
      }, 'both pods published in Redis');
      const tools = ['whoami', 'wait', 'changed'];
      const union = ['apples', 'pears'].flatMap((server) => tools.map((t) => `${server}__${t}`));
      for (const relay of relays) {
        for (const modern of [false, true]) {
          const client = await connect('orchard', modern, relay.port);
          const names = (await client.listTools()).tools.map((t) => t.name);
          expect(names.sort(), `replica ${relay.port}, modern ${modern}`).toEqual(union.sort());
          expect(await whoami(client, 'apples__whoami')).toBe('orchard-a');
          expect(await whoami(client, 'pears__whoami')).toBe('orchard-b');
        }
      }
    } finally {
      for (const pod of pods) pod.stop();
      directory.disconnect();
    }
  });

  it('lists and calls tools with the MCP Inspector CLI through the proxy', async () => {
    const cli = (...args: string[]) =>
      inspectorCli(
        [
          `http://127.0.0.1:${proxy.port}/mcp/garden/echo`,
          ...['--transport', 'http', '--format', 'json'],
          ...['--header', `Authorization: Bearer ${tokens.alice}`],
          ...args,
        ],
        '/etc/ssl/certs/ca-certificates.crt',
      );
    // Two runs: two connections, so two replicas of the proxy's turn.
    for (let i = 0; i < 2; i++) {
      const call = await cli('--method', 'tools/call', '--tool-name', 'whoami');
      expect(call.code, call.stderr).toBe(0);
      const result = JSON.parse(call.stdout) as { result: { content: unknown } };
      expect(firstText(result.result)).toMatch(/^garden-[ab]$/);
    }
  });

  it('stays live but not ready until Redis was reached once', async () => {
    const env = { ...relayEnv(), RELAY_REDIS_URL: `redis://127.0.0.1:${await closedPort()}` };
    const lonely = await startRelay({ env, waitForHealth: false });
    try {
      await lonely.listening;
      await waitFor(async () => (await health(lonely, '/health/live')).status === 200, 'live');
      const ready = await health(lonely, '/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.details.redis?.status).toBe('down');
      // Nothing that needs shared state is served meanwhile: a clear 503, never a 404.
      const response = await fetch(`http://127.0.0.1:${lonely.port}/mcp/shop/echo`, {
        method: 'POST',
        headers: postHeaders('an-unknown-session'),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('2');
    } finally {
      await lonely.stop();
    }
  });

  it('refuses a request that claims to come from another replica without a signature', async () => {
    const [relay] = relays;
    if (!relay) throw new Error('no relay');
    const failures = () => metric(relay.metricsUrl, 'relay_peer_auth_failures_total');
    const before = (await failures()) ?? 0;
    const withToken: Record<string, string> = { Authorization: `Bearer ${tokens.alice}` };
    for (const authorization of [{}, withToken]) {
      const response = await fetch(`http://127.0.0.1:${relay.port}/mcp/shop/echo`, {
        method: 'POST',
        headers: {
          ...authorization,
          'Content-Type': 'application/json',
          'x-relay-peer-signature': 'a-guess',
          'x-relay-peer-client': 'alice',
          'x-relay-peer-agents': 'shop',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(response.status).toBe(401);
    }
    expect(await failures()).toBe(before + 2);
  });

  it('answers 503 + Retry-After without Redis, never 404, and recovers when Redis is back empty', async () => {
    const client = await connect('shop/echo');
    await whoami(client);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId;
    await redis.stop();
    const statuses = await Promise.all(
      relays.map(async (relay) => {
        const response = await fetch(`http://127.0.0.1:${relay.port}/mcp/shop/echo`, {
          method: 'POST',
          headers: postHeaders(sessionId),
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 7,
            method: 'tools/call',
            params: { name: 'whoami' },
          }),
        });
        return { status: response.status, retryAfter: response.headers.get('retry-after') };
      }),
    );
    // The replica holding the session still serves it; the others cannot find it.
    expect(statuses.filter((s) => s.status === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s.status === 503 && s.retryAfter === '2')).toHaveLength(2);
    // No new session either: one other replicas could not find would get 404 there.
    for (const relay of relays) {
      const opened = await fetch(`http://127.0.0.1:${relay.port}/mcp/shop/echo`, {
        method: 'POST',
        headers: postHeaders(undefined),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
      });
      expect(opened.status).toBe(503);
      expect(opened.headers.get('mcp-session-id')).toBeNull();
    }
    for (const relay of relays) {
      expect((await health(relay, '/health/live')).status).toBe(200);
      expect((await health(relay, '/health/ready')).status).toBe(200);
      const now = await health(relay);
      expect(now.status).toBe(503);
      expect(now.body.details.redis?.status).toBe('down');
    }
    await redis.start();
    await untilSettled();
    // Agents re-registered and the session re-published by their holders: all works again.
    for (let i = 0; i < 4; i++) expect(['shop-a', 'shop-b']).toContain(await whoami(client));
    expect(await whoami(await connect('garden/echo'))).toMatch(/^garden-/);
  });

  // Last: it leaves two replicas.
  it('fails only the calls in flight on a replica killed with SIGKILL, at once; the rest go on', async () => {
    const holders = await shopHolders();
    expect(holders).toHaveLength(2);
    const victim = holders[0];
    if (!victim) throw new Error('no replica holds a shop connection');
    const workers = await Promise.all([0, 1, 2, 3, 4, 5].map(() => connect('shop/echo')));
    const labels = await Promise.all(workers.map((client) => whoami(client)));
    // A second failure ends a loop: the session did not go on (test/relay-session-move checks
    // that every session moves off a killed replica).
    const calls = callInLoops(
      workers,
      4,
      (f, all) => all.filter((g) => g.worker === f.worker).length > 1,
    );
    await waitFor(() => calls.ok.every((n) => n >= 2), 'every loop under way');
    calls.killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await calls.done;
    const { failures, okAfterKill } = calls;
    expect(failures.length).toBeGreaterThan(0);
    // Each failure came at once after the kill, not at the request timeout.
    for (const failure of failures) expect(failure.afterKill).toBeLessThan(3000);
    // The sessions on the connection that lives on (one label) kept working, each after at
    // most the one call it had in flight through the killed replica.
    const seen = JSON.stringify({ labels, okAfterKill, failures });
    expect(wentOn(calls, labels, 'shop-a') || wentOn(calls, labels, 'shop-b'), seen).toBe(true);
    // The killed replica's agent connection came back through another replica by itself.
    await waitFor(async () => (await connections('shop')) === 2, 'shop reconnected', 15_000);
    // New sessions open at once: a replica still listed in Redis that refuses is skipped.
    for (let i = 0; i < 4; i++) {
      expect(['shop-a', 'shop-b']).toContain(await whoami(await connect('shop/echo')));
    }
  });
});

function postHeaders(sessionId: string | undefined): Record<string, string> {
  return {
    Authorization: `Bearer ${tokens.alice}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Mcp-Protocol-Version': '2025-11-25',
    ...(sessionId && { 'Mcp-Session-Id': sessionId }),
  };
}

/** The live replicas holding a connection of `shop`. */
async function shopHolders(): Promise<RunningRelay[]> {
  const holders = [];
  for (const relay of live()) if ((await connections('shop', [relay])) > 0) holders.push(relay);
  return holders;
}

/** Every session on the connection `label` answered 5+ calls after the kill, failing 1 at most. */
function wentOn(
  calls: { okAfterKill: number[]; failures: LoopFailure[] },
  labels: string[],
  label: string,
): boolean {
  return labels.every(
    (l, worker) =>
      l !== label ||
      ((calls.okAfterKill[worker] ?? 0) >= 5 &&
        calls.failures.filter((f) => f.worker === worker).length <= 1),
  );
}
