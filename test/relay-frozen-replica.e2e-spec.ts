import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EchoAgent } from './fixtures/relay-server/echo-agent.js';
import { logLines, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { firstText } from './fixtures/relay-e2e-support.js';
import { newToken } from './support/app-process.js';
import { freshConnectionFetch } from './support/plain-fetch.js';
import { redisAvailable, TestRedis, untilAgentPublished } from './support/redis.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { untilRefreshed } from './support/relay-cluster.js';
import { RoundRobinProxy } from './support/round-robin-proxy.js';

/**
 * Three relay replicas sharing a real Redis behind a round-robin TCP proxy; one agent with one
 * connection, which pings the relay as the real agent does. The replica holding the connection
 * freezes (SIGSTOP: its sockets stay open, nothing answers) while calls run through the other
 * two. The calls they passed to it are answered -32001 within a ping of the first one that
 * timed out there, not each after its own timeout; the agent reconnects through another
 * replica by itself, and calls go on, those of a 2025-11-25 session the frozen replica held too.
 */
const REQUEST_TIMEOUT_MS = 2000;
const PROBE_TIMEOUT_MS = 1000;
/** Scheduling slack on a shared 2-core machine; still far below today's +5 s per request. */
const MARGIN_MS = 1500;
const tokens = { shop: newToken(), alice: newToken() };
const redis = new TestRedis();
const relays: RunningRelay[] = [];
/** Replicas the load balancer sends nothing to (a frozen pod fails its readiness probe). */
const outOfService = new Set<RunningRelay>();
const proxy = new RoundRobinProxy(() =>
  relays.filter((r) => !outOfService.has(r)).map((r) => r.port),
);
const clients: Client[] = [];
let agent: EchoAgent | undefined;
let frozen: RunningRelay | undefined;

const relayEnv = () => ({
  RELAY_REDIS_URL: redis.url,
  RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(tokens.shop) }),
  RELAY_CLIENTS: JSON.stringify({ alice: { tokens: sha256Entry(tokens.alice), agents: ['shop'] } }),
  RELAY_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_MS / 1000),
  RELAY_AGENT_PROBE_TIMEOUT_SECONDS: String(PROBE_TIMEOUT_MS / 1000),
});

const connections = async (relay: RunningRelay) => {
  const response = await fetch(`${relay.healthUrl}/health`);
  const body = (await response.json()) as {
    details: { agents?: { agents: Record<string, { connections: number }> } };
  };
  return body.details.agents?.agents.shop?.connections ?? 0;
};

/**
 * The official SDK client through the proxy, stateless (2026-07-28) unless `legacy`: then with a
 * 2025-11-25 session, held by the replica holding the agent connection.
 */
async function connect(port = proxy.port, mode: 'legacy' | 'stateless' = 'stateless') {
  const client = new Client(
    { name: 'relay-frozen-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: mode === 'legacy' ? 'legacy' : { pin: '2026-07-28' } } },
  );
  const transport = new StreamableHTTPClientTransport(
    new URL(`http://127.0.0.1:${port}/mcp/shop/echo`),
    {
      fetch: freshConnectionFetch,
      requestInit: { headers: { Authorization: `Bearer ${tokens.alice}` } },
    },
  );
  await client.connect(transport);
  clients.push(client);
  return client;
}
const sessionOf = (client: Client) => (client.transport as StreamableHTTPClientTransport).sessionId;

const whoami = async (client: Client) =>
  firstText(await client.callTool({ name: 'whoami', arguments: {} }));

beforeAll(async () => {
  if (!redisAvailable) return;
  await redis.start();
  relays.push(...(await Promise.all([0, 1, 2].map(() => startRelay({ env: relayEnv() })))));
  await proxy.start();
  agent = new EchoAgent(
    () => `ws://127.0.0.1:${proxy.port}/agent/v1/connect`,
    tokens.shop,
    'shop-a',
    ['echo'],
    { everyMs: 300 },
  );
  await agent.start();
  await waitFor(
    async () => (await Promise.all(relays.map(connections))).reduce((a, b) => a + b, 0) === 1,
    'the agent connected',
  );
  await untilAgentPublished(redis.url, 'shop');
}, 60_000);

afterAll(async () => {
  frozen?.child.kill('SIGCONT');
  for (const client of clients) await client.close().catch(() => undefined);
  agent?.stop();
  await proxy.stop();
  await Promise.all(relays.map((r) => r.stop()));
  await redis.close();
});

interface Failure {
  code: number | undefined;
  lastedMs: number;
  endedAfterFreezeMs: number;
}

/** One call loop per client (`wait`, 50 ms), until `runForMs` after the freeze. */
class CallLoops {
  frozenAt = 0;
  readonly failures: Failure[] = [];
  readonly ok: number[];
  /** Calls that succeeded `laterThanMs` or more after the freeze. */
  readonly okLater: number[];
  readonly done: Promise<void[]>;

  constructor(
    clients: Client[],
    private readonly laterThanMs: number,
    private readonly runForMs: number,
  ) {
    this.ok = clients.map(() => 0);
    this.okLater = clients.map(() => 0);
    this.done = Promise.all(clients.map((client, worker) => this.loop(client, worker)));
  }

  private async loop(client: Client, worker: number): Promise<void> {
    while (this.frozenAt === 0 || Date.now() < this.frozenAt + this.runForMs) {
      const started = Date.now();
      try {
        await client.callTool({ name: 'wait', arguments: { ms: 50 } });
        this.ok[worker] = (this.ok[worker] ?? 0) + 1;
        if (this.frozenAt > 0 && Date.now() - this.frozenAt > this.laterThanMs) {
          this.okLater[worker] = (this.okLater[worker] ?? 0) + 1;
        }
      } catch (error) {
        const ended = Date.now();
        this.failures.push({
          code: error instanceof ProtocolError ? error.code : undefined,
          lastedMs: ended - started,
          endedAfterFreezeMs: ended - this.frozenAt,
        });
      }
    }
  }
}

describe.skipIf(!redisAvailable)('a frozen relay replica (e2e)', () => {
  it("answers the replicas' ping only with their secret", async () => {
    const [relay] = relays;
    if (!relay) throw new Error('no relay');
    const failures = () => metric(relay.metricsUrl, 'relay_peer_auth_failures_total');
    const before = (await failures()) ?? 0;
    const ping = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${relay.port}/relay-peer/ping`, { headers });
    expect((await ping({})).status).toBe(401);
    expect((await ping({ Authorization: `Bearer ${tokens.alice}` })).status).toBe(401);
    expect((await ping({ 'x-relay-peer-signature': 'a-guess' })).status).toBe(401);
    expect(await failures()).toBe(before + 1);
  });

  it('keeps a replica that answers its ping: a slow call there gets its own -32003', async () => {
    const holders = await Promise.all(relays.map(connections));
    const holder = relays[holders.indexOf(1)];
    if (!holder) throw new Error('no replica holds the agent');
    // The call enters at a replica whose request timeout is half the holder's: it pings the
    // holder a second before the holder answers -32003, however late its timers run. With equal
    // timeouts, a late timer there could see the holder's answer first and never ping.
    const entry = await startRelay({
      env: { ...relayEnv(), RELAY_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_MS / 2000) },
    });
    try {
      await untilRefreshed(entry);
      const pongs = () =>
        logLines(holder.output(), (l) => l.route === '/relay-peer/ping' && l.status === 204).length;
      const client = await connect(entry.port);
      const call = client.callTool({ name: 'wait', arguments: { ms: REQUEST_TIMEOUT_MS + 1000 } });
      await expect(call).rejects.toMatchObject({ code: -32003 });
      // Pinged at its request timeout, the holder answered (the replicas' secret): nothing was cut.
      await waitFor(() => pongs() > 0, 'the ping answered');
      expect(await metric(entry.metricsUrl, 'relay_unresponsive_peers_total')).toBe(0);
      expect(await whoami(client)).toBe('shop-a');
    } finally {
      await entry.stop();
    }
  });

  it('answers the calls waiting on it -32001 after one ping, and the agent moves on', async () => {
    const holders = await Promise.all(relays.map(connections));
    const victim = relays[holders.indexOf(1)];
    if (!victim) throw new Error('no replica holds the agent connection');
    const others = relays.filter((r) => r !== victim);
    // Clients reach only the other replicas; what reaches the frozen one, they pass to it.
    outOfService.add(victim);
    const stateless = await Promise.all([0, 1, 2, 3, 4, 5].map(() => connect()));
    // Its session lives on the replica about to freeze; it must move, not wait there.
    const inSession = await connect(proxy.port, 'legacy');
    const sessionId = sessionOf(inSession);
    expect(sessionId).toBeDefined();
    const workers = [...stateless, inSession];
    const bound = REQUEST_TIMEOUT_MS + PROBE_TIMEOUT_MS + MARGIN_MS;
    const loops = new CallLoops(workers, bound, 9000);
    await waitFor(() => loops.ok.every((n) => n >= 2), 'every loop under way');
    frozen = victim;
    loops.frozenAt = Date.now();
    victim.child.kill('SIGSTOP');
    try {
      await loops.done;
    } finally {
      victim.child.kill('SIGCONT');
      frozen = undefined;
    }
    const seen = JSON.stringify(loops);
    // Calls were waiting on the frozen replica: each was answered -32001 once one ping went
    // unanswered, not after the request timeout + 5 s each.
    expect(loops.failures.length, seen).toBeGreaterThan(0);
    for (const failure of loops.failures) {
      expect(failure.code, seen).toBe(-32001);
      expect(failure.lastedMs, seen).toBeLessThan(bound);
      expect(failure.endedAfterFreezeMs, seen).toBeLessThan(bound);
    }
    // The agent reconnected through another replica, and every loop kept calling it there:
    // the session's too, moved there (same id) well before the frozen owner's record expired.
    expect(agent?.connects, seen).toBe(2);
    expect(await Promise.all(others.map(connections))).toContain(1);
    for (const n of loops.okLater) expect(n, seen).toBeGreaterThanOrEqual(5);
    expect(sessionOf(inSession)).toBe(sessionId);
    const outs = await Promise.all(
      others.map((r) => metric(r.metricsUrl, 'relay_unresponsive_peers_total')),
    );
    expect(outs.reduce<number>((a, b) => a + (b ?? 0), 0)).toBeGreaterThan(0);
  }, 60_000);
});
