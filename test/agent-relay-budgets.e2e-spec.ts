import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { TestAgentServer } from './fixtures/agent-server/test-agent-server.js';
import { hostileServer, logLines, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';

/**
 * The agent's byte budgets toward its peers, on the built app under a memory bound: a child
 * whose stdin falls behind while the agent's server sends it 4 MB notifications, and a server
 * that stops reading while an MCP server logs 3 MB messages. Both attacks are many times the
 * budgets (16 MiB each by default); the process keeps its peak RSS under a bound well below
 * the chart pod's 512 MiB (old space capped as a small pod would), and the plant API and the
 * other MCP servers keep serving.
 */
const MIB = 1024 * 1024;
/** Peak RSS allowed: the app alone idles near 130 MiB; the pod's limit is 512 MiB. */
const PEAK_RSS_MIB = 350;

let ca: TestCa;
let server: TestAgentServer;
let app: RunningApp;
let nextPlant = 1;
const agentToken = newToken();
const SERVERS = ['deaf', 'chatty', 'bystander'] as const;

/** The process's peak resident memory so far (VmHWM), in MiB. */
function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmHWM for pid ${pid}`);
  return Number(kib) / 1024;
}

/** The process is alive and the plant API still stores plants. */
async function storeStillServes(): Promise<void> {
  expect(app.child.exitCode).toBeNull();
  expect(app.child.signalCode).toBeNull();
  const id = nextPlant++;
  const answer = await call(`${app.apiUrl}/plants`, {
    method: 'POST',
    token: app.token,
    body: JSON.stringify({ id, name: `survivor ${id}` }),
  });
  expect(answer.status).toBe(200);
}

async function bystanderEchoes(text: string): Promise<void> {
  const answer = await server.call('bystander', 'tools/call', {
    name: 'echo',
    arguments: { text },
  });
  expect(answer.result).toMatchObject({ content: [{ text }] });
}

/** A drop counter of the agent for `server:kind`. */
function dropped(name: string, series: string): Promise<number | undefined> {
  const [mcpServer, kind] = series.split(':');
  return metric(app.metricsUrl, `${name}{server="${mcpServer}",kind="${kind}"}`);
}

beforeAll(async () => {
  ca = createTestCa();
  server = new TestAgentServer(ca, agentToken);
  await server.start();
  app = await startApp({
    env: {
      SERVICE_AGENT_TOKEN: agentToken,
      SERVICE_SERVER_URL: server.url,
      NODE_EXTRA_CA_CERTS: ca.caFile,
      // A small pod's heap: without byte budgets the attacks below exhaust it.
      NODE_OPTIONS: '--max-old-space-size=256 --max-semi-space-size=16',
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
});

afterAll(async () => {
  await app?.stop();
  await server?.stop();
});

describe("the agent's byte budgets (e2e, memory-bound)", () => {
  it("drops the server's notifications past 16 MiB waiting for a child's stdin, counted", async () => {
    const started = Date.now();
    const deaf = await server.call('deaf', 'tools/call', {
      name: 'deaf',
      arguments: { ms: 600_000 },
    });
    expect(deaf.result).toMatchObject({ content: [{ text: 'not listening' }] });
    const padding = 'x'.repeat(4_000_000);
    // 40 x 4 MB: 160 MB, 10 times the budget. Sent as the socket takes them (the relay
    // server's own backpressure), so only the agent can hold what the child does not read.
    // Kept short: the deaf child fails its first ping (40 s after it came up) and restarts.
    for (let i = 0; i < 40; i++) {
      await server.notifyFlushed('deaf', {
        jsonrpc: '2.0',
        method: 'notifications/padding',
        params: { n: i, padding },
      });
      if (i === 20) {
        await storeStillServes();
        await bystanderEchoes('during the notifications');
      }
    }
    // At most 16 MiB (4 of them) wait for the child; the 64 KiB pipe takes none whole.
    const count = await waitFor(async () => {
      const value = await dropped('agent_mcp_stdin_dropped_total', 'deaf:notification');
      return value !== undefined && value >= 35 && value;
    }, 'the dropped notifications counted');
    expect(count).toBeLessThanOrEqual(40);
    // A large request to the deaf server is refused at once, not queued behind them.
    const refused = await server.call('deaf', 'tools/call', {
      name: 'echo',
      arguments: { text: padding },
    });
    expect(refused.error).toEqual({
      code: -32005,
      message: `too many bytes waiting for MCP server "deaf" to read them (at most ${16 * MIB})`,
    });
    expect(peakRssMiB(app.child.pid!)).toBeLessThan(PEAK_RSS_MIB);
    await storeStillServes();
    await bystanderEchoes('after the notifications');
    const warned = logLines(app.output(), (l) =>
      String(l.msg).startsWith('dropped a relayed notification: too many bytes waiting'),
    );
    expect(warned.length).toBeGreaterThan(0);
    // Rate limited: a burst of 10, then 1 a second.
    expect(warned.length).toBeLessThanOrEqual(11 + (Date.now() - started) / 1000);
  }, 180_000);

  it('drops log notifications past 16 MiB queued to a server that stopped reading, and answers -32005', async () => {
    const delivered = () =>
      server
        .framesOf('rpc')
        .filter((f) => (f.message as { method?: string }).method === 'notifications/message')
        .length;
    const before = delivered();
    // Right after a ping: the pause ends long before a missing pong could end the connection.
    await server.nextPing();
    server.pauseReading();
    // 60 x 3 MB: 180 MB, 11 times the budget of the connection's send queue; then a 3 MB
    // answer, which has no room either. Short: a pause past the agent's pong timeout (10 s)
    // after one of its pings would end the connection.
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
    await storeStillServes();
    expect(peakRssMiB(app.child.pid!)).toBeLessThan(PEAK_RSS_MIB);
    // The answer follows the notifications on stdout: the log line may come first.
    await waitFor(
      async () => (await dropped('agent_server_send_dropped_total', 'chatty:answer')) === 1,
      'the answer replaced by an error',
    );
    const notifications = await dropped('agent_server_send_dropped_total', 'chatty:notification');
    expect(notifications).toBeGreaterThanOrEqual(50);

    server.resumeReading();
    // The answer is not lost: the request fails with an error a client can retry on.
    expect((await answer).error).toEqual({
      code: -32005,
      message: expect.stringMatching(
        /^answer of MCP server "chatty" dropped: \d+ bytes are waiting to be sent to the agent server \(at most 16777216\)$/,
      ) as unknown,
    });
    // Every notification was delivered or counted as dropped.
    await waitFor(() => delivered() - before + notifications! === 60, 'the kept notifications');
    const echoed = await server.call('chatty', 'tools/call', {
      name: 'echo',
      arguments: { text: 'reading again' },
    });
    expect(echoed.result).toMatchObject({ content: [{ text: 'reading again' }] });
    await bystanderEchoes('after the stall');
  }, 180_000);
});
