import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestAgentServer } from './fixtures/agent-server/test-agent-server.js';
import { logLines, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  dropped,
  type FloodedAgent,
  floodDeafChild,
  floodStalledServer,
  startFloodedAgent,
} from './support/agent-floods.js';
import type { RunningApp } from './support/app-process.js';
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

let agent: FloodedAgent;
let server: TestAgentServer;
let app: RunningApp;
let nextPlant = 1;

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

beforeAll(async () => {
  // A small pod's heap: without byte budgets the attacks below exhaust it.
  agent = await startFloodedAgent({
    NODE_OPTIONS: '--max-old-space-size=256 --max-semi-space-size=16',
  });
  ({ server, app } = agent);
});

afterAll(async () => {
  await app?.stop();
  await server?.stop();
});

describe("the agent's byte budgets (e2e, memory-bound)", () => {
  it("drops the server's notifications past 16 MiB waiting for a child's stdin, counted", async () => {
    const started = Date.now();
    const { deaf, padding, count } = await floodDeafChild(agent, async () => {
      await storeStillServes();
      await bystanderEchoes('during the notifications');
    });
    expect(deaf.result).toMatchObject({ content: [{ text: 'not listening' }] });
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
    const { answer } = await floodStalledServer(agent);
    await storeStillServes();
    expect(peakRssMiB(app.child.pid!)).toBeLessThan(PEAK_RSS_MIB);
    // The answer follows the notifications on stdout: the log line may come first.
    await waitFor(
      async () => (await dropped(app, 'agent_server_send_dropped_total', 'chatty', 'answer')) === 1,
      'the answer replaced by an error',
    );
    const notifications = await dropped(
      app,
      'agent_server_send_dropped_total',
      'chatty',
      'notification',
    );
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
