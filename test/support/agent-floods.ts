import { createTestCa, type TestCa } from '../fixtures/agent-server/test-ca.js';
import { type RpcAnswer, TestAgentServer } from '../fixtures/agent-server/test-agent-server.js';
import { hostileServer, logLines, metric, waitFor } from '../fixtures/mcp-e2e-support.js';
import { newToken, type RunningApp, startApp } from './app-process.js';

/**
 * The two floods of the agent's byte budgets, shared by test/agent-relay-budgets.e2e-spec.ts
 * (which bounds the memory they cost) and bench/agent-memory.scenario.ts (which measures it).
 */
export interface FloodedAgent {
  ca: TestCa;
  server: TestAgentServer;
  app: RunningApp;
}

const SERVERS = ['deaf', 'chatty', 'bystander'] as const;

/** The built app as agent of a test agent server, its MCP servers the hostile fixture's. */
export async function startFloodedAgent(
  env: Record<string, string | undefined>,
  main?: string,
): Promise<FloodedAgent> {
  const ca = createTestCa();
  const agentToken = newToken();
  const server = new TestAgentServer(ca, agentToken);
  await server.start();
  const app = await startApp({
    main,
    env: {
      SERVICE_AGENT_TOKEN: agentToken,
      SERVICE_SERVER_URL: server.url,
      NODE_EXTRA_CA_CERTS: ca.caFile,
      ...env,
    },
    mcpServers: {
      mcpServers: Object.fromEntries(SERVERS.map((name) => [name, hostileServer()])),
    },
  });
  await waitFor(
    () =>
      SERVERS.every((name) => server.inventory().some((s) => s.name === name && s.state === 'up')),
    'the MCP servers up in the inventory',
  );
  return { ca, server, app };
}

/** A drop counter of the agent for one MCP server and kind of message. */
export function dropped(
  app: RunningApp,
  name: string,
  mcpServer: string,
  kind: string,
): Promise<number | undefined> {
  return metric(app.metricsUrl, `${name}{server="${mcpServer}",kind="${kind}"}`);
}

/**
 * 40 x 4 MB notifications (160 MB, 10 times the budget) to a child that stopped reading its
 * stdin, sent as the socket takes them (the relay server's own backpressure), so only the agent
 * can hold what the child does not read; `midway` runs after the 21st. Kept short: the deaf
 * child fails its first ping (40 s after it came up) and restarts. Ends once 35 are dropped.
 */
export async function floodDeafChild(
  { server, app }: FloodedAgent,
  midway: () => Promise<void>,
): Promise<{ deaf: RpcAnswer; padding: string; count: number }> {
  const deaf = await server.call('deaf', 'tools/call', {
    name: 'deaf',
    arguments: { ms: 600_000 },
  });
  const padding = 'x'.repeat(4_000_000);
  for (let i = 0; i < 40; i++) {
    const params = { n: i, padding };
    await server.notifyFlushed('deaf', { jsonrpc: '2.0', method: 'notifications/padding', params });
    if (i === 20) await midway();
  }
  // At most 16 MiB (4 of them) wait for the child; the 64 KiB pipe takes none whole.
  const count = await waitFor(async () => {
    const value = await dropped(app, 'agent_mcp_stdin_dropped_total', 'deaf', 'notification');
    return value !== undefined && value >= 35 && value;
  }, 'the dropped notifications counted');
  return { deaf, padding, count };
}

/**
 * The agent server stops reading while an MCP server logs 60 x 3 MB (180 MB, 11 times the
 * budget of the connection's send queue), then answers 3 MB, which has no room either. Short: a
 * pause past the agent's pong timeout (10 s) after one of its pings would end the connection,
 * so it starts right after a ping. Ends when the MCP server is done logging, the answer pending.
 */
export async function floodStalledServer({
  server,
  app,
}: FloodedAgent): Promise<{ answer: Promise<RpcAnswer> }> {
  await server.nextPing();
  server.pauseReading();
  const answer = server.call(
    'chatty',
    'tools/call',
    { name: 'log-flood', arguments: { count: 60, bytes: 3_000_000, answerBytes: 3_000_000 } },
    'log-flood',
    60_000,
  );
  await waitFor(
    () => logLines(app.output(), (l) => l.msg === 'log flood done').at(0),
    'the MCP server done logging',
    60_000,
  );
  return { answer };
}
