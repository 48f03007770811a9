import { afterEach, describe, expect, it } from 'vitest';
import { logLines, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { bigInventory, callTool, RawAgent } from './fixtures/relay-server/raw-agent.js';
import { newToken } from './support/app-process.js';
import { rssMiB } from './support/process-memory.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';

/**
 * One agent token against the built relay server: its connections, the inventories it keeps
 * there and the frames it sends are bounded per agent and per connection, and another agent's
 * clients keep being served throughout. The relay runs with a small heap; its resident memory
 * is bounded while the attacks go far past the budgets.
 */
const shopToken = newToken();
const labToken = newToken();
const aliceToken = newToken();
const HEAP_MIB = 192;
/** Well below the chart's 512Mi; the relay idles near 100 MiB. */
const RSS_BOUND_MIB = 320;
/** 10,000 tools of about 350 bytes: 3.5 MB of JSON, inside the 4 MiB frame limit. */
const TEN_THOUSAND_TOOLS = bigInventory(10_000, 350);

let relay: RunningRelay | undefined;
const agents: RawAgent[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) agent.ws.terminate();
  await relay?.stop();
  relay = undefined;
});

async function start(env: Record<string, string>): Promise<RunningRelay> {
  relay = await startRelay({
    nodeArgs: [`--max-old-space-size=${HEAP_MIB}`],
    env: {
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(shopToken), lab: sha256Entry(labToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(aliceToken), agents: ['lab'] },
      }),
      ...env,
    },
  });
  return relay;
}

function agent(running: RunningRelay, token: string, servers = TEN_THOUSAND_TOOLS): RawAgent {
  const connection = new RawAgent(
    `ws://127.0.0.1:${running.port}/agent/v1/connect`,
    token,
    servers,
  );
  agents.push(connection);
  return connection;
}

/** The well-behaved agent `lab` with server `echo`, and a call through it that works. */
async function labServing(running: RunningRelay): Promise<() => Promise<string>> {
  const lab = agent(running, labToken, [{ name: 'echo', state: 'up', tools: [] }]);
  expect(await lab.opened).toBe(true);
  const call = () => callTool(`http://127.0.0.1:${running.port}/mcp/lab/echo`, aliceToken);
  await waitFor(async () => (await call().catch(() => '')) === 'answered', 'lab answering');
  return call;
}

const rejections = async (reason: string) =>
  (await metric(relay!.metricsUrl, `relay_agent_rejections_total{reason="${reason}"}`)) ?? 0;

describe('relay server: what one agent token may hold', () => {
  it('caps connections and inventory bytes per agent, and serves other agents meanwhile', async () => {
    const running = await start({
      RELAY_MAX_CONNECTIONS_PER_AGENT: '4',
      RELAY_MAX_INVENTORY_BYTES_PER_AGENT: String(8 * 1024 * 1024),
    });
    const call = await labServing(running);

    // 100 connections of one token at once: 25 times the cap. Small inventories first, so no
    // connection is dropped (freeing its slot) while the others are still being refused.
    const crowd = Array.from({ length: 100 }, () => agent(running, shopToken, []));
    const opened = await Promise.all(crowd.map((a) => a.opened));
    expect(opened.filter(Boolean).length).toBe(4);
    expect(crowd.filter((a) => a.status === 429)).toHaveLength(96);
    expect(await rejections('too_many_connections')).toBe(96);

    // The 4 accepted then announce 10,000 tools each: 2 inventories fit the agent's 8 MiB, the
    // others are dropped.
    const accepted = crowd.filter((_, i) => opened[i]);
    for (const a of accepted) a.send({ type: 'inventory', servers: TEN_THOUSAND_TOOLS });
    await waitFor(
      () => accepted.filter((a) => a.closeCode !== undefined).length >= 2,
      'two connections dropped',
    );
    expect(accepted.map((a) => a.closeCode ?? 'open').sort()).toEqual([1008, 1008, 'open', 'open']);
    expect(await rejections('inventory_budget')).toBe(2);

    expect(await call()).toBe('answered');
    const rss = rssMiB(running.child.pid);
    expect(rss, `relay RSS ${rss} MiB`).toBeLessThan(RSS_BOUND_MIB);

    // A closed connection frees its slot and its inventory bytes.
    for (const a of crowd) a.ws.terminate();
    await waitFor(async () => {
      const again = agent(running, shopToken, []);
      return await again.opened;
    }, 'a slot again');
  });

  it('rate-limits the lines about agents connecting and disconnecting', async () => {
    const running = await start({});
    const connectLines = () =>
      logLines(running.output(), (l) =>
        ['agent connected', 'agent disconnected'].includes(l.msg as string),
      );
    const connectAndLeave = async () => {
      const pod = agent(running, shopToken, []);
      expect(await pod.opened).toBe(true);
      pod.ws.close();
      await pod.closed;
    };
    for (let i = 0; i < 300; i++) await connectAndLeave();
    // The count of lines left out rides on the next line written, once the rate lets one
    // through: keep connecting until it has (a fast run ends before the first refill).
    await waitFor(async () => {
      if (connectLines().some((l) => typeof l.suppressed === 'number' && l.suppressed > 0)) {
        return true;
      }
      await connectAndLeave();
      return false;
    }, 'a line that counts the ones left out');
    await waitFor(
      async () => (await metric(running.metricsUrl, 'relay_agent_connections{agent="shop"}')) === 0,
      'every connection gone',
    );
    // 300 and more connects and disconnects: far fewer lines, and they count the rest.
    const lines = connectLines();
    expect(lines.length).toBeLessThan(100);
    expect(lines.some((l) => typeof l.suppressed === 'number' && l.suppressed > 0)).toBe(true);
  });
});

describe('relay server: one agent connection flooding frames', () => {
  it.each([
    [
      '4 MiB frames of an unknown type',
      `{"type":"junk","pad":"${'x'.repeat(4 * 1024 * 1024 - 40)}"}`,
      { RELAY_AGENT_MAX_BYTES_PER_SECOND: String(1024 * 1024) },
    ],
    [
      // Only the inventory rate applies here: its own budget catches them.
      '10,000-tool inventories again and again',
      inventoryText(),
      { RELAY_AGENT_MAX_BYTES_PER_SECOND: '0' },
    ],
    ['tiny frames', '{"type":"junk"}', {}],
  ])('closes a connection sending %s, and serves other agents', async (_what, frame, env) => {
    const running = await start(env);
    const call = await labServing(running);
    const flooder = agent(running, shopToken, []);
    expect(await flooder.opened).toBe(true);
    flooder.flood(frame);
    expect(await call()).toBe('answered');
    await waitFor(() => flooder.closeCode !== undefined, 'the flooding connection closed', 30_000);
    expect(flooder.closeCode).toBe(1008);
    expect(await rejections('rate_limited')).toBe(1);
    expect(await call()).toBe('answered');
  });
});

function inventoryText(): string {
  return JSON.stringify({ type: 'inventory', servers: TEN_THOUSAND_TOOLS });
}
