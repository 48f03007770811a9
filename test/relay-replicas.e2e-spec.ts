import { readFileSync } from 'node:fs';
import { ProtocolError } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { metric, processTable, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  firstText,
  type McpConnection,
  relayFixtureServer,
  startShopRelay,
  shopAgentEnv,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { loggedSoFar } from './support/logged-output.js';
import type { RunningRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * Two replicas of the built service on one agent token (two pods of one deployment), each with
 * its own copy of our fixture MCP server, behind the built relay server over TLS. The fixture's
 * `pid` tool tells which replica answered: each replica's /health shows its child's pid.
 *
 * beforeEach brings back two connected replicas with the fixture up (the SIGKILL test replaces
 * the one it kills), so the tests pass in any order.
 */
const agentToken = newToken();
const clientToken = newToken();

let ca: TestCa;
let tlsFetch: typeof fetch;
let relay: RunningRelay;
const replicas: RunningApp[] = [];
const opened: McpConnection[] = [];

interface RelayHealth {
  details: { agents: { agents: Record<string, { connections: number; serversUp: string[] }> } };
}
interface AgentHealth {
  details: {
    mcpServers: { servers: { name: string; state: string; pid: number | null }[] };
    agentServer: { connected: boolean; tokenRejected?: boolean; lastError?: string };
  };
}

const shop = async () =>
  ((await (await fetch(`${relay.healthUrl}/health`)).json()) as RelayHealth).details.agents.agents
    .shop;
const agentHealth = async (app: RunningApp) =>
  (await (await fetch(`${app.healthUrl}/health`)).json()) as AgentHealth;
/** The pid of a replica's fixture server while it is up, from the replica's /health. */
const fixturePid = async (app: RunningApp) => {
  const fixture = (await agentHealth(app)).details.mcpServers.servers.find(
    (s) => s.name === 'fixture',
  );
  return fixture?.state === 'up' && fixture.pid !== null ? fixture.pid : undefined;
};

const startReplica = () =>
  startApp({
    env: shopAgentEnv(relay, ca.caFile, agentToken),
    mcpServers: { mcpServers: { fixture: relayFixtureServer() } },
  });

async function session(): Promise<McpConnection> {
  const mcp = await connectMcp(
    `https://localhost:${relay.port}/mcp/shop/fixture`,
    clientToken,
    tlsFetch,
  );
  opened.push(mcp);
  return mcp;
}
const pidOf = async (mcp: McpConnection) =>
  Number(firstText(await mcp.client.callTool({ name: 'pid', arguments: {} })));

beforeAll(async () => {
  ca = createTestCa();
  tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
  relay = await startShopRelay(ca.dir, agentToken, clientToken);
  replicas.push(...(await Promise.all([startReplica(), startReplica()])));
});

beforeEach(async () => {
  await waitFor(
    async () => {
      const pids = await Promise.all(replicas.map(fixturePid));
      const agent = await shop();
      return (
        pids.every((pid) => pid !== undefined) &&
        agent?.connections === 2 &&
        agent.serversUp.includes('fixture')
      );
    },
    'two replicas connected with the fixture up',
    60_000,
  );
});

afterAll(async () => {
  for (const mcp of opened) await mcp.close().catch(() => undefined);
  await Promise.all(replicas.map((app) => app.stop()));
  await relay?.stop();
});

describe('two agent replicas on one token (e2e)', () => {
  it('spreads new sessions over both replicas and keeps each session on its replica', async () => {
    const replicaPids = await Promise.all(replicas.map(fixturePid));
    const seen = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const mcp = await session();
      const first = await pidOf(mcp);
      // Every request of the session reaches the same replica's server.
      expect(await pidOf(mcp)).toBe(first);
      expect(await pidOf(mcp)).toBe(first);
      seen.add(first);
      await mcp.close();
    }
    expect([...seen].sort()).toEqual([...replicaPids].sort());
  });

  it('answers a session whose replica is SIGKILLed mid-call with a clean error; a new session works through the other', async () => {
    const mcp = await session();
    const pid = await pidOf(mcp);
    const pids = await Promise.all(replicas.map(fixturePid));
    const victimIndex = pids.indexOf(pid);
    expect(victimIndex).toBeGreaterThanOrEqual(0);
    const victim = replicas[victimIndex]!;
    const survivorPid = pids[1 - victimIndex];

    const inFlight = () => metric(relay.metricsUrl, 'relay_mcp_requests_in_flight{agent="shop"}');
    const call = mcp.client.callTool({ name: 'wait', arguments: { seconds: 600 } }).then(
      () => 'answered',
      (error: unknown) => error,
    );
    await waitFor(async () => (await inFlight()) === 1, 'the call in flight');
    try {
      await victim.stop('SIGKILL');
      const error = await call;
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).code).toBe(-32001);
      expect((error as ProtocolError).message).toContain(
        'the connection of agent "shop" closed before it answered',
      );
      expect((await shop())?.connections).toBe(1);
      // The session went with its connection: the client is told so, and starts a new one.
      await expect(mcp.client.callTool({ name: 'pid', arguments: {} })).rejects.toThrow();
      const fresh = await session();
      expect(await pidOf(fresh)).toBe(survivorPid);
    } finally {
      // The killed agent could not stop its MCP server: end it if stdin's close did not.
      await waitFor(
        () => !processTable().some((p) => p.pid === pid && p.state !== 'Z'),
        "the killed replica's fixture gone",
      ).catch(() => process.kill(pid, 'SIGKILL'));
      replicas[victimIndex] = await startReplica();
    }
  });
});

describe('an agent whose token the relay refuses (e2e)', () => {
  it("shows the refusal in the agent's /health and metrics; the replicas stay connected", async () => {
    const refusedBefore =
      (await metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="unauthorized"}')) ?? 0;
    // A client token is never an agent token.
    const refused = await startApp({
      env: {
        SERVICE_AGENT_TOKEN: clientToken,
        SERVICE_SERVER_URL: `https://localhost:${relay.port}`,
        NODE_EXTRA_CA_CERTS: ca.caFile,
      },
    });
    try {
      const status = await waitFor(async () => {
        const agentServer = (await agentHealth(refused)).details.agentServer;
        return agentServer.tokenRejected ? agentServer : undefined;
      }, 'the refusal in /health');
      expect(status).toMatchObject({
        connected: false,
        lastError: 'agent token rejected by server (HTTP 401)',
      });
      expect(await metric(refused.metricsUrl, 'agent_server_connected')).toBe(0);
      expect(
        await metric(relay.metricsUrl, 'relay_agent_rejections_total{reason="unauthorized"}'),
      ).toBeGreaterThan(refusedBefore);
      expect((await shop())?.connections).toBe(2);
      const output = await loggedSoFar(refused, `${refused.apiUrl}/plants`);
      expect(output).not.toContain(clientToken);
    } finally {
      await refused.stop();
    }
  });
});
