import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { echoServer, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { ScriptedAgent } from './fixtures/relay-server/scripted-agent.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { type RunningRelay, sha256Entry, startRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';

/**
 * The agent's aggregate endpoint (`/mcp/<agent>`, every server's tools as `<server>__<tool>`)
 * and `notifications/tools/list_changed` when an agent's inventory changes, end to end over TLS
 * under a base path: the built plant-store service as agent `shop` (two echo fixtures, then a
 * third by hot reload), the official SDK's Streamable HTTP client, and a scripted agent `lab`
 * for what the built agent cannot be made to do on cue (progress, an inventory of our choice).
 */
const BASE = '/relay';
const shopToken = newToken();
const labToken = newToken();
const clientToken = newToken();
const labOnlyToken = newToken();

let ca: TestCa;
let caPem: string;
let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;
const scripted: ScriptedAgent[] = [];

const origin = () => `https://localhost:${relay.port}`;
const mcpUrl = (path: string) => new URL(`${origin()}${BASE}/mcp/${path}`);
const SHOP_SERVERS = {
  echo: echoServer({ WHO: 'echo' }),
  other: echoServer({ WHO: 'other' }),
};

interface Health {
  details: { agents: { agents: Record<string, { connections: number; serversUp: string[] }> } };
}
const agentHealth = async (agent: string) =>
  ((await (await fetch(`${relay.healthUrl}/health`)).json()) as Health).details.agents.agents[
    agent
  ];
const streams = async (agent: string) =>
  (await metric(relay.metricsUrl, `relay_mcp_event_streams{agent="${agent}"}`)) ?? 0;

/** Replaces the agent's mcp-servers.json in one step, as an operator's deploy would. */
function writeServers(servers: Record<string, unknown>): void {
  const file = join(app.configDir, 'mcp-servers.json');
  writeFileSync(`${file}.tmp`, JSON.stringify({ mcpServers: servers }));
  renameSync(`${file}.tmp`, file);
}

/** An SDK client on `path`, with its GET event stream open (where list_changed arrives). */
async function connectClient(
  path: string,
  options: ConstructorParameters<typeof Client>[1] = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const agent = path.split('/')[0]!;
  const client = new Client({ name: 'relay-aggregate-e2e', version: '1.0.0' }, options);
  const transport = new StreamableHTTPClientTransport(mcpUrl(path), {
    fetch: tlsFetch,
    requestInit: { headers: { Authorization: `Bearer ${clientToken}` } },
  });
  const before = await streams(agent);
  await client.connect(transport);
  await waitFor(async () => (await streams(agent)) > before, "the client's event stream open");
  return { client, transport };
}

async function disconnect({ client, transport }: Awaited<ReturnType<typeof connectClient>>) {
  await transport.terminateSession();
  await client.close();
}

async function post(path: string, body: unknown, session?: string) {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: `Bearer ${clientToken}`,
  };
  if (session) headers['Mcp-Session-Id'] = session;
  const response = await tlsFetch(mcpUrl(path), {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    json: text === '' ? null : (JSON.parse(text) as Record<string, unknown>),
  };
}

async function rawSession(path: string): Promise<string> {
  const init = await post(path, {
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    },
  });
  expect(init.status).toBe(200);
  return init.session!;
}

async function scriptedLab(servers: string[]): Promise<ScriptedAgent> {
  const live = () => scripted.filter((a) => !a.gone).length;
  await waitFor(async () => (await agentHealth('lab'))?.connections === live(), 'old lab gone');
  const agent = new ScriptedAgent(
    `wss://localhost:${relay.port}${BASE}/agent/v1/connect`,
    labToken,
    caPem,
    servers,
  );
  scripted.push(agent);
  await agent.connect();
  await waitFor(async () => (await agentHealth('lab'))?.connections === live(), 'lab greeted');
  return agent;
}

const names = (tools: Tool[]) => tools.map((t) => t.name);
const text = (result: unknown) =>
  ((result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;

beforeAll(async () => {
  ca = createTestCa();
  caPem = readFileSync(ca.caFile, 'utf8');
  tlsFetch = fetchTrusting(caPem);
  relay = await startRelay({
    env: {
      RELAY_BASE_PATH: BASE,
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ shop: sha256Entry(shopToken), lab: sha256Entry(labToken) }),
      RELAY_CLIENTS: JSON.stringify({
        alice: { tokens: sha256Entry(clientToken), agents: ['shop', 'lab'] },
        bob: { tokens: sha256Entry(labOnlyToken), agents: ['lab'] },
      }),
      RELAY_REQUEST_TIMEOUT_SECONDS: '10',
    },
  });
  app = await startApp({
    env: {
      SERVICE_AGENT_TOKEN: shopToken,
      SERVICE_SERVER_URL: `${origin()}${BASE}`,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    },
    mcpServers: { mcpServers: SHOP_SERVERS },
  });
  await waitFor(
    async () => (await agentHealth('shop'))?.serversUp.length === 2,
    'shop connected with echo and other up',
    30_000,
  );
});

afterAll(async () => {
  for (const agent of scripted) agent.vanish();
  await app?.stop();
  await relay?.stop();
});

describe('the aggregate endpoint with the plant-store agent (e2e)', () => {
  it("offers every server's tools as <server>__<tool>, and calls the one the prefix names", async () => {
    const connected = await connectClient('shop');
    const { client } = connected;
    try {
      expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true } });
      expect(client.getServerVersion()).toMatchObject({ name: 'plant-store-relay' });
      const { tools } = await client.listTools();
      expect(names(tools).sort()).toEqual([
        'echo__crash',
        'echo__echo',
        'echo__env',
        'other__crash',
        'other__echo',
        'other__env',
      ]);
      // The servers' own definitions, under the new name.
      expect(tools.find((t) => t.name === 'other__echo')).toMatchObject({
        description: 'Returns its text',
        inputSchema: { properties: { text: { type: 'string' } } },
      });

      const echoed = await client.callTool({ name: 'echo__echo', arguments: { text: 'hi' } });
      expect(text(echoed)).toBe('hi');
      // Each server's fixture has its own WHO: the prefix picked the server.
      const who = await client.callTool({ name: 'other__env', arguments: { name: 'WHO' } });
      expect(text(who)).toBe('other');
      expect(text(await client.callTool({ name: 'echo__env', arguments: { name: 'WHO' } }))).toBe(
        'echo',
      );
      await client.ping();
    } finally {
      await disconnect(connected);
    }
  });

  it('answers 401 without a client token, and the same 404 for an agent the client may not reach', async () => {
    const initialize = (path: string, token?: string) =>
      tlsFetch(mcpUrl(path), {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...(token && { Authorization: `Bearer ${token}` }),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
      });
    expect((await initialize('shop')).status).toBe(401);
    expect((await initialize('shop', shopToken)).status).toBe(401);
    const forbidden = await initialize('shop', labOnlyToken);
    const missing = await initialize('nowhere', labOnlyToken);
    expect(forbidden.status).toBe(404);
    expect(await forbidden.text()).toBe(await missing.text());
    expect((await initialize('lab', labOnlyToken)).status).toBe(200);
  });

  it('answers an unknown tool with -32602 and methods it does not offer with -32601', async () => {
    const session = await rawSession('shop');
    const call = (id: number, name: string) =>
      post('shop', { jsonrpc: '2.0', id, method: 'tools/call', params: { name } }, session);
    expect((await call(1, 'echo')).json).toMatchObject({ id: 1, error: { code: -32602 } });
    expect((await call(2, 'nope__echo')).json).toMatchObject({ id: 2, error: { code: -32001 } });
    const resources = await post(
      'shop',
      { jsonrpc: '2.0', id: 3, method: 'resources/list' },
      session,
    );
    expect(resources.json).toMatchObject({
      id: 3,
      error: { code: -32601, message: expect.stringContaining('/mcp/shop/<server>') as unknown },
    });
    // The session belongs to the aggregate endpoint, not to a server's.
    expect(
      (await post('shop/echo', { jsonrpc: '2.0', id: 4, method: 'ping' }, session)).status,
    ).toBe(404);
  });

  it('sends list_changed and the new list when mcp-servers.json gains or loses a server', async () => {
    const refreshed: string[][] = [];
    const connected = await connectClient('shop', {
      listChanged: {
        tools: {
          onChanged: (error, tools) => {
            if (!error && tools) refreshed.push(names(tools));
          },
        },
      },
    });
    try {
      expect(names((await connected.client.listTools()).tools)).not.toContain('added__echo');
      writeServers({ ...SHOP_SERVERS, added: echoServer({ WHO: 'added' }) });
      const withAdded = await waitFor(
        () => refreshed.find((list) => list.includes('added__echo')),
        'a refreshed list with the added server',
        30_000,
      );
      expect(withAdded).toEqual(expect.arrayContaining(['echo__echo', 'other__echo']));
      const who = await connected.client.callTool({
        name: 'added__env',
        arguments: { name: 'WHO' },
      });
      expect(text(who)).toBe('added');

      const seen = refreshed.length;
      writeServers(SHOP_SERVERS);
      await waitFor(
        () => refreshed.slice(seen).find((list) => !list.includes('added__echo')),
        'a refreshed list without the removed server',
        30_000,
      );
      expect(names((await connected.client.listTools()).tools)).not.toContain('added__echo');
    } finally {
      writeServers(SHOP_SERVERS);
      await disconnect(connected);
    }
  });
});

describe('the aggregate endpoint and list changes, with a scripted agent (e2e)', () => {
  it('passes progress and cancellation through the prefix, with the ids mapped', async () => {
    const lab = await scriptedLab(['slow', 'fast']);
    const connected = await connectClient('lab');
    try {
      const progress: number[] = [];
      const result = connected.client.callTool(
        { name: 'slow__work', arguments: { n: 1 } },
        { onprogress: (p) => progress.push(p.progress) },
      );
      const call = await waitFor(
        () => lab.requests.find((r) => r.message.method === 'tools/call'),
        'tools/call at the agent',
      );
      expect(call.server).toBe('slow');
      expect(call.message.params).toMatchObject({ name: 'work', arguments: { n: 1 } });
      const meta = call.message.params?._meta as { progressToken?: unknown };
      expect(meta.progressToken).toMatch(/^relay-[A-Za-z0-9_-]{22}$/);
      // Another server that learnt the token cannot report progress on this call: step 0
      // comes from `fast`, so only `slow`'s 1 and 2 reach the client.
      for (const [server, step] of [
        ['fast', 0],
        ['slow', 1],
        ['slow', 2],
      ] as const) {
        lab.send({
          type: 'rpc',
          server,
          message: {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: meta.progressToken, progress: step, total: 2 },
          },
        });
      }
      lab.answer(call, { content: [{ type: 'text', text: 'done' }] });
      expect(text(await result)).toBe('done');
      expect(progress).toEqual([1, 2]);
    } finally {
      await disconnect(connected);
    }

    const session = await rawSession('lab');
    const cancelled = () => lab.calls.filter((c) => c.message.method === 'notifications/cancelled');
    const waiting = post(
      'lab',
      { jsonrpc: '2.0', id: 'c-1', method: 'tools/call', params: { name: 'fast__x' } },
      session,
    );
    const request = await waitFor(
      () => lab.requests.find((r) => r.server === 'fast'),
      'the call at the agent',
    );
    const cancel = await post(
      'lab',
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'c-1', reason: 'user' },
      },
      session,
    );
    expect(cancel.status).toBe(202);
    await waitFor(() => cancelled().length === 1, 'notifications/cancelled at the agent');
    expect(cancelled()[0]).toMatchObject({
      server: 'fast',
      message: { params: { requestId: request.message.id, reason: 'user' } },
    });
    expect((await waiting).json).toMatchObject({ id: 'c-1', error: { code: -32800 } });
    lab.vanish();
  });

  it("sends list_changed to a server's sessions when the agent's inventory changes that server", async () => {
    const lab = await scriptedLab(['slow', 'fast']);
    let changes = 0;
    const client = new Client({ name: 'relay-aggregate-e2e', version: '1.0.0' });
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changes++;
    });
    const transport = new StreamableHTTPClientTransport(mcpUrl('lab/slow'), {
      fetch: tlsFetch,
      requestInit: { headers: { Authorization: `Bearer ${clientToken}` } },
    });
    const before = await streams('lab');
    await client.connect(transport);
    try {
      await waitFor(async () => (await streams('lab')) > before, 'the event stream open');
      const tool = { name: 'work', inputSchema: { type: 'object' } };
      // A change of another server first: frames are handled in order, so once the second
      // one's notification arrived, the first one would have too.
      lab.send({
        type: 'inventory',
        servers: [
          { name: 'slow', state: 'up', tools: [] },
          { name: 'fast', state: 'down', tools: [] },
        ],
      });
      lab.send({
        type: 'inventory',
        servers: [
          { name: 'slow', state: 'up', tools: [tool] },
          { name: 'fast', state: 'down', tools: [] },
        ],
      });
      await waitFor(() => changes > 0, 'list_changed at the client');
      expect(changes).toBe(1);
      lab.send({
        type: 'inventory',
        servers: [
          { name: 'slow', state: 'down', tools: [tool] },
          { name: 'fast', state: 'down', tools: [] },
        ],
      });
      await waitFor(() => changes > 1, 'list_changed when the server went down');
    } finally {
      await transport.terminateSession();
      await client.close();
      lab.vanish();
    }
  });

  it("asks one pod for all pages of a server's list (a cursor is that pod's)", async () => {
    const pods = [await scriptedLab(['slow']), await scriptedLab(['slow'])];
    const connected = await connectClient('lab');
    try {
      const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });
      const lists = (pod: ScriptedAgent) =>
        pod.requests.filter((r) => r.message.method === 'tools/list');
      // Twice, as pods are taken in turn: whichever pod the first page goes to gets the second.
      const askedPods = new Set<ScriptedAgent>();
      for (const round of [1, 2]) {
        const before = pods.map((pod) => lists(pod).length);
        const listing = connected.client.listTools();
        const asked = await waitFor(
          () => pods.find((pod, i) => lists(pod).length > before[i]!),
          `page 1 of round ${round} at a pod`,
        );
        askedPods.add(asked);
        const first = lists(asked).at(-1)!;
        expect(first.message.params?.cursor).toBeUndefined();
        asked.answer(first, { tools: [tool('a')], nextCursor: 'c' });
        const second = await waitFor(
          () => lists(asked)[lists(asked).indexOf(first) + 1],
          'page 2 at the same pod',
        );
        expect(second.message.params).toEqual({ cursor: 'c' });
        asked.answer(second, { tools: [tool('b')] });
        expect(names((await listing).tools)).toEqual(['slow__a', 'slow__b']);
        const other = pods.findIndex((pod) => pod !== asked);
        expect(lists(pods[other]!)).toHaveLength(before[other]!);
      }
      // The precondition of the point: both pods served a listing, so either could have been asked.
      expect(askedPods.size).toBe(2);
    } finally {
      await disconnect(connected);
      for (const pod of pods) pod.vanish();
    }
  });

  it("sends list_changed to the agent's aggregate sessions when a pod connects or leaves", async () => {
    await waitFor(
      async () => (await agentHealth('lab'))?.connections === 0,
      'no lab pod connected',
    );
    let changes = 0;
    const connected = await connectClient('lab');
    connected.client.setNotificationHandler('notifications/tools/list_changed', () => {
      changes++;
    });
    try {
      expect((await connected.client.listTools()).tools).toEqual([]);
      const lab = await scriptedLab(['slow']);
      await waitFor(() => changes === 1, 'list_changed when the pod connected');
      // The list is the server's own, page by page (the relay follows nextCursor).
      const listing = connected.client.listTools();
      const pages = () => lab.requests.filter((r) => r.message.method === 'tools/list');
      const first = await waitFor(() => pages()[0], 'tools/list at the agent');
      expect(first.message.params?.cursor).toBeUndefined();
      const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });
      lab.answer(first, { tools: [tool('a')], nextCursor: 'p2' });
      const second = await waitFor(() => pages()[1], 'the second page asked');
      expect(second.message.params).toEqual({ cursor: 'p2' });
      lab.answer(second, { tools: [tool('b')] });
      expect(names((await listing).tools)).toEqual(['slow__a', 'slow__b']);
      lab.send({
        type: 'rpc',
        server: 'slow',
        message: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      });
      await waitFor(() => changes === 2, "the server's own list_changed");
      lab.vanish();
      await waitFor(() => changes === 3, 'list_changed when the pod left');
    } finally {
      await disconnect(connected);
    }
  });
});
