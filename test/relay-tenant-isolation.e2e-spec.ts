import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestCa } from './fixtures/agent-server/test-ca.js';
import { hostileServer, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  firstText,
  relayFixtureServer,
  shopAgentEnv,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * One client's MCP traffic never reaches another client, end to end: the official SDK client ->
 * the built relay over TLS -> the built service as agent `shop` -> our fixtures. `victim` is a
 * well-behaved server (mcp-relay-fixture-server.mjs); `leaky`, `logs` and `solo` are the
 * hostile fixture, which makes up progress for other requests' tokens and logs its calls'
 * arguments, as many servers do.
 */
const agentToken = newToken();
const tokens = { alice: newToken(), bob: newToken(), carol: newToken() };
const servers = {
  victim: relayFixtureServer(),
  leaky: hostileServer(),
  logs: hostileServer(),
  solo: hostileServer(),
};

let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;

type Who = keyof typeof tokens;
type Revision = '2025' | '2026';

/** An SDK client of `who` on `/mcp/shop<path>` ('' is the aggregate endpoint). */
async function connect(who: Who, path: string, revision: Revision = '2025'): Promise<Client> {
  const client = new Client(
    { name: `isolation-${who}`, version: '1.0.0' },
    revision === '2026' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  const transport = new StreamableHTTPClientTransport(
    new URL(`https://localhost:${relay.port}/mcp/shop${path}`),
    {
      fetch: tlsFetch,
      requestInit: { headers: { Authorization: `Bearer ${tokens[who]}` } },
    },
  );
  await client.connect(transport);
  return client;
}

const eventStreams = async () =>
  (await metric(relay.metricsUrl, 'relay_mcp_event_streams{agent="shop"}')) ?? 0;
const dropped = async (reason: string) =>
  (await metric(
    relay.metricsUrl,
    `relay_server_notifications_dropped_total{agent="shop",reason="${reason}"}`,
  )) ?? 0;

/** A 2025 client that asked for logging and holds its GET stream, collecting what it hears. */
async function listener(who: Who, server: string) {
  const streamsBefore = await eventStreams();
  const client = await connect(who, `/${server}`);
  const logs: string[] = [];
  let listChanged = 0;
  client.setNotificationHandler('notifications/message', (n) => {
    logs.push(JSON.stringify(n.params.data));
  });
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    listChanged++;
  });
  await client.setLoggingLevel('debug');
  await waitFor(async () => (await eventStreams()) > streamsBefore, `${who}'s GET stream open`);
  return { client, logs, listChanged: () => listChanged };
}

beforeAll(async () => {
  const ca = createTestCa();
  tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
  const clients = Object.fromEntries(
    Object.entries(tokens).map(([name, token]) => [
      name,
      { tokens: sha256Entry(token), agents: ['shop'] },
    ]),
  );
  relay = await startRelay({
    env: {
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(agentToken) }),
      RELAY_CLIENTS: JSON.stringify(clients),
    },
  });
  app = await startApp({
    env: shopAgentEnv(relay, ca.caFile, agentToken),
    mcpServers: { mcpServers: servers },
  });
});

beforeEach(() => untilShopServersUp(relay, Object.keys(servers)));

afterAll(async () => {
  await app?.stop();
  await relay?.stop();
});

describe("a server's progress reaches only the request it went to (e2e)", () => {
  it.each([
    ['/victim', '2025'],
    ['', '2025'],
    ['/victim', '2026'],
    ['', '2026'],
  ] as const)(
    'on /mcp/shop%s with MCP %s, progress another server makes up never reaches the call',
    async (path, revision) => {
      const alice = await connect('alice', path, revision);
      const bob = await connect('bob', '/leaky');
      const releaser = await connect('carol', '/victim');
      try {
        const heard: string[] = [];
        const held = alice.callTool(
          { name: path === '' ? 'victim__hold' : 'hold', arguments: { seconds: 120 } },
          { onprogress: (p) => heard.push(p.message ?? '') },
        );
        await waitFor(() => heard.includes('holding'), "alice's call at the victim server");
        // The relay's tokens were `relay-<n>`, a counter of the connection: a few hundred
        // guesses cover every request of this file.
        const injected = await bob.callTool({
          name: 'inject-progress',
          arguments: { from: 1, to: 300, message: 'INJECTED by leaky' },
        });
        expect(firstText(injected)).toBe('injected');
        // Its notifications came before its answer on the agent's socket: all were handled.
        expect(firstText(await releaser.callTool({ name: 'release', arguments: {} }))).toBe('1');
        expect(firstText(await held)).toBe('held');
        expect(heard).toEqual(['holding', 'released']);
      } finally {
        await Promise.all([alice.close(), bob.close(), releaser.close()]);
      }
    },
  );
});

describe("a server's logging never reaches another client (e2e)", () => {
  it("keeps alice's logged arguments from bob's stream on a server both use", async () => {
    const bob = await listener('bob', 'logs');
    const alice = await listener('alice', 'logs');
    const aggregate = await connect('alice', '');
    try {
      const unattributed = await dropped('unattributed');
      const secret = `apiKey-${newToken()}`;
      const logged = await alice.client.callTool({
        name: 'log-args',
        arguments: { apiKey: secret },
      });
      expect(firstText(logged)).toBe('logged');
      // The same through the aggregate endpoint, which has no logging of its own.
      const viaAggregate = await aggregate.callTool({
        name: 'logs__log-args',
        arguments: { apiKey: `${secret}-aggregate` },
      });
      expect(firstText(viaAggregate)).toBe('logged');
      // A list change comes after the log lines on the same stream: once bob has it, he has
      // heard everything the server said before it.
      await alice.client.callTool({ name: 'list-changed', arguments: {} });
      await waitFor(() => bob.listChanged() > 0, 'the list change on bob stream');
      await waitFor(() => alice.listChanged() > 0, 'the list change on alice stream');
      expect(bob.logs.filter((line) => line.includes(secret))).toEqual([]);
      // Whose line it is cannot be known: nobody gets it, and it is counted.
      expect(alice.logs).toEqual([]);
      expect(await dropped('unattributed')).toBeGreaterThanOrEqual(unattributed + 2);
    } finally {
      await Promise.all([bob.client.close(), alice.client.close(), aggregate.close()]);
    }
  });

  it("gives a server's log lines to its one client, on the sessions that asked for them", async () => {
    const carol = await listener('carol', 'solo');
    const streamsBefore = await eventStreams();
    const quiet = await connect('carol', '/solo');
    const heardByQuiet: string[] = [];
    let quietListChanged = 0;
    quiet.setNotificationHandler('notifications/message', (n) => {
      heardByQuiet.push(JSON.stringify(n.params.data));
    });
    quiet.setNotificationHandler('notifications/tools/list_changed', () => {
      quietListChanged++;
    });
    await waitFor(async () => (await eventStreams()) > streamsBefore, 'the quiet GET stream');
    try {
      await carol.client.callTool({ name: 'log-args', arguments: { note: 'mine' } });
      await carol.client.callTool({ name: 'list-changed', arguments: {} });
      await waitFor(() => quietListChanged > 0, 'the list change on the quiet stream');
      await waitFor(
        () => carol.logs.some((line) => line.includes('"note":"mine"')),
        "carol's own log line on her stream",
      );
      // The session that never asked for logging hears none.
      expect(heardByQuiet).toEqual([]);
    } finally {
      await Promise.all([carol.client.close(), quiet.close()]);
    }
  });
});
