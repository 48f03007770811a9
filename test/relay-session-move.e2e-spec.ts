import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EchoAgent } from './fixtures/relay-server/echo-agent.js';
import { waitFor } from './fixtures/mcp-e2e-support.js';
import { firstText } from './fixtures/relay-e2e-support.js';
import { newToken } from './support/app-process.js';
import { callInLoops } from './support/call-loops.js';
import { freshConnectionFetch } from './support/plain-fetch.js';
import { redisAvailable, TestRedis, untilAgentPublished } from './support/redis.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { RoundRobinProxy } from './support/round-robin-proxy.js';

/**
 * 2025-11-25 sessions outlive the replica that held them: three replicas sharing a real Redis
 * behind a round-robin TCP proxy (every request a new TCP connection, so a session's requests
 * reach every replica); agents connect to one replica first, and through the proxy after.
 */
const tokens = { shop: newToken(), garden: newToken(), alice: newToken() };
const redis = new TestRedis();
const relays: RunningRelay[] = [];
const pods: EchoAgent[] = [];
const clients: Client[] = [];
const proxy = new RoundRobinProxy(() => live().map((r) => r.port));
const live = () => relays.filter((r) => r.child.exitCode === null && r.child.signalCode === null);

const relayEnv = () => ({
  RELAY_REDIS_URL: redis.url,
  RELAY_SESSION_MOVE_SECONDS: '2',
  RELAY_AGENTS: JSON.stringify({
    shop: sha256Entry(tokens.shop),
    garden: sha256Entry(tokens.garden),
  }),
  RELAY_CLIENTS: JSON.stringify({
    alice: { tokens: sha256Entry(tokens.alice), agents: ['shop', 'garden'] },
  }),
});

const agentConnections = async (relay: RunningRelay, agent: string): Promise<number> => {
  const body = (await (await fetch(`${relay.healthUrl}/health`)).json()) as {
    details: { agents?: { agents: Record<string, { connections: number }> } };
  };
  return body.details.agents?.agents[agent]?.connections ?? 0;
};

/** A pod that first connects straight to `first`, then (reconnecting) through the proxy. */
async function podOn(first: RunningRelay, agent: 'shop' | 'garden', label: string) {
  let connects = 0;
  const url = () =>
    connects++ === 0
      ? `ws://127.0.0.1:${first.port}/agent/v1/connect`
      : `ws://127.0.0.1:${proxy.port}/agent/v1/connect`;
  const pod = new EchoAgent(url, tokens[agent], label);
  pods.push(pod);
  await pod.start();
  await waitFor(async () => (await agentConnections(first, agent)) === 1, `${label} connected`);
  // Other replicas find the pod through Redis: a session opened before would find it nowhere.
  await untilAgentPublished(redis.url, agent, [`http://127.0.0.1:${first.port}`]);
  return pod;
}

async function connect(path: string): Promise<Client> {
  const client = new Client({ name: 'relay-session-move-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(
    new URL(`http://127.0.0.1:${proxy.port}/mcp/${path}`),
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

beforeAll(async () => {
  if (!redisAvailable) return;
  await redis.start();
  relays.push(...(await Promise.all([0, 1, 2].map(() => startRelay({ env: relayEnv() })))));
  await proxy.start();
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  for (const pod of pods) pod.stop();
  await proxy.stop();
  await Promise.all(relays.map((r) => r.stop()));
  await redis.close();
});

describe.skipIf(!redisAvailable)('2025-11-25 sessions move between relay replicas (e2e)', () => {
  it('answers 503 + Retry-After (not 404) while the agent is away, then goes on', async () => {
    const [holder] = relays;
    if (!holder) throw new Error('no relay');
    const pod = await podOn(holder, 'garden', 'garden-a');
    const client = await connect('garden/echo');
    expect(firstText(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('garden-a');
    const sessionId = sessionOf(client);
    pod.stop();
    await waitFor(async () => (await agentConnections(holder, 'garden')) === 0, 'garden gone');
    for (const relay of relays) {
      const response = await postTo(relay, sessionId, 'whoami');
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).not.toBeNull();
    }
    // The pod comes back (through the proxy, to any replica): the same session goes on there.
    await podOn(holder, 'garden', 'garden-a').catch(() => undefined);
    await waitFor(async () => {
      const counts = await Promise.all(relays.map((r) => agentConnections(r, 'garden')));
      return counts.reduce((a, b) => a + b, 0) === 1;
    }, 'garden back');
    for (let i = 0; i < 3; i++) {
      expect(firstText(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('garden-a');
    }
    expect(sessionOf(client)).toBe(sessionId);
  });

  // Last: it leaves two replicas.
  it('keeps the sessions of a replica killed with SIGKILL: only calls in flight on it fail', async () => {
    const [victim] = relays;
    if (!victim) throw new Error('no relay');
    await podOn(victim, 'shop', 'shop-a');
    const workers = await Promise.all([0, 1, 2, 3, 4, 5].map(() => connect('shop/echo')));
    const sessions = workers.map(sessionOf);
    // A call sent after the kill that fails ends its loop: the session did not move.
    const calls = callInLoops(workers, 5, (failure) => !failure.startedBeforeKill);
    await waitFor(() => calls.ok.every((n) => n >= 2), 'every loop under way');
    victim.child.kill('SIGKILL');
    // Calls sent before the process was gone may have reached it: those are in flight on it.
    await victim.exited;
    calls.killedAt = Date.now();
    await calls.done;
    const seen = JSON.stringify({ okAfterKill: calls.okAfterKill, failures: calls.failures });
    // Only calls sent while the replica was dying failed (a few at most), and every session
    // went on, the same one (no new initialize).
    expect(calls.failures.length, seen).toBeGreaterThan(0);
    expect(calls.failures.length, seen).toBeLessThanOrEqual(2 * workers.length);
    expect(
      calls.failures.filter((f) => !f.startedBeforeKill),
      seen,
    ).toEqual([]);
    for (let worker = 0; worker < workers.length; worker++) {
      expect(calls.okAfterKill[worker] ?? 0, seen).toBeGreaterThanOrEqual(5);
      expect(sessionOf(workers[worker] as Client)).toBe(sessions[worker]);
    }
    const [watched] = workers;
    if (!watched) throw new Error('no worker');
    await listChangedReaches(watched);
  });
});

/** Notifications for a moved session reach its GET stream, re-opened on its new replica. */
async function listChangedReaches(watched: Client): Promise<void> {
  let changes = 0;
  watched.setNotificationHandler('notifications/tools/list_changed', () => void changes++);
  await waitFor(async () => {
    await watched.callTool({ name: 'changed', arguments: {} });
    return changes > 0;
  }, 'list_changed on the moved session');
}

function postTo(relay: RunningRelay, sessionId: string | undefined, tool: string) {
  return fetch(`http://127.0.0.1:${relay.port}/mcp/garden/echo`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${tokens.alice}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': '2025-11-25',
      ...(sessionId && { 'Mcp-Session-Id': sessionId }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool } }),
  });
}
