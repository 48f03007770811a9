import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  everythingServer,
  firstText,
  relayFixtureServer,
  writeMcpServers,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp } from './support/app-process.js';
import type { RunningRelay } from './support/relay-process.js';

/**
 * MCP 2026-07-28 clients through the relay (docs/design/mcp-2026-07-28.md): the
 * official SDK client pinned to 2026-07-28 (no initialize, no session: server/discover, then
 * every request with its `_meta` envelope) -> the built relay over TLS -> the built service as
 * agent `shop` -> `@modelcontextprotocol/server-everything` and our fixture, both 2025 servers.
 * A client in the SDK's default mode keeps the 2025 session beside it.
 */
const agentToken = newToken();
const clientToken = newToken();

let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;

const servers = { everything: everythingServer(), fixture: relayFixtureServer() };
const mcpUrl = (path: string) => new URL(`https://localhost:${relay.port}/mcp/shop${path}`);
const inFlight = () => metric(relay.metricsUrl, 'relay_mcp_requests_in_flight{agent="shop"}');

/** An SDK client pinned to 2026-07-28 on `path` ('' is the aggregate endpoint). */
async function connectModern(
  path: string,
  options: ConstructorParameters<typeof Client>[1] = {},
): Promise<{ client: Client; requests: string[] }> {
  const requests: string[] = [];
  const client = new Client(
    { name: 'relay-mcp-2026-e2e', version: '1.0.0' },
    { ...options, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  const transport = new StreamableHTTPClientTransport(mcpUrl(path), {
    // Every request the client makes, to show it never opens a session.
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      requests.push(`${init?.method ?? 'GET'} ${headers.get('mcp-session-id') ?? '-'}`);
      return tlsFetch(input, init);
    },
    requestInit: { headers: { Authorization: `Bearer ${clientToken}` } },
  });
  await client.connect(transport);
  return { client, requests };
}

beforeAll(async () => {
  ({ tlsFetch, relay, app } = await startShopPath(servers, agentToken, clientToken));
});

// A test may restart a server: each starts once both are up again.
beforeEach(() => untilShopServersUp(relay, Object.keys(servers)));

afterAll(() => stopShopPath({ app, relay }));

describe('MCP 2026-07-28 clients through agent and relay (e2e)', () => {
  it('discovers, lists the tools and calls them with arguments on /mcp/<agent>/<server>', async () => {
    const { client, requests } = await connectModern('/everything');
    try {
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(client.getServerCapabilities()).toMatchObject({ tools: {} });
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['echo', 'get-sum']));
      const echoed = await client.callTool({ name: 'echo', arguments: { message: 'modern' } });
      expect(firstText(echoed)).toBe('Echo: modern');
      const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
      expect(firstText(sum)).toContain('42');
      // No initialize, no session: every request a POST without Mcp-Session-Id.
      expect(requests.length).toBeGreaterThanOrEqual(4);
      expect(new Set(requests)).toEqual(new Set(['POST -']));
    } finally {
      await client.close();
    }
  });

  it("streams a call's progress on the POST's answer", async () => {
    const { client } = await connectModern('/everything');
    try {
      const progress: { progress: number; total?: number }[] = [];
      const result = await client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
        { onprogress: (p) => progress.push({ progress: p.progress, total: p.total }) },
      );
      expect(firstText(result)).toContain('Long running operation completed');
      expect(progress).toEqual([1, 2, 3].map((step) => ({ progress: step, total: 3 })));
    } finally {
      await client.close();
    }
  });

  it('cancels a call when the client closes its POST: the MCP server sees notifications/cancelled', async () => {
    const { client } = await connectModern('/fixture');
    try {
      const cancelled = async () =>
        Number(firstText(await client.callTool({ name: 'cancellations', arguments: {} })));
      const before = await cancelled();
      const abort = new AbortController();
      const settled = client
        .callTool({ name: 'wait', arguments: { seconds: 600 } }, { signal: abort.signal })
        .then(
          () => 'answered',
          (error: unknown) => error,
        );
      await waitFor(async () => (await inFlight()) === 1, 'the wait call in flight at the relay');
      // The precondition: the MCP server runs it (a cancel that overtakes its call is ignored).
      const waiting = async () =>
        Number(firstText(await client.callTool({ name: 'waiting', arguments: {} })));
      await waitFor(async () => (await waiting()) === 1, 'the wait call at the MCP server');
      abort.abort('the user gave up');
      expect(await settled).not.toBe('answered');
      await waitFor(async () => (await cancelled()) === before + 1, 'the server saw the cancel');
      await waitFor(async () => (await inFlight()) === 0, 'nothing left in flight');
    } finally {
      await client.close();
    }
  });

  it('serves the aggregate endpoint /mcp/<agent> too', async () => {
    const { client } = await connectModern('');
    try {
      expect(client.getProtocolEra()).toBe('modern');
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['everything__echo', 'fixture__pid']));
      const echoed = await client.callTool({
        name: 'everything__echo',
        arguments: { message: 'aggregated' },
      });
      expect(firstText(echoed)).toBe('Echo: aggregated');
      const progress: number[] = [];
      await client.callTool(
        {
          name: 'everything__trigger-long-running-operation',
          arguments: { duration: 1, steps: 2 },
        },
        { onprogress: (p) => progress.push(p.progress) },
      );
      expect(progress).toEqual([1, 2]);
    } finally {
      await client.close();
    }
  });

  it('sends tools list_changed on a subscriptions/listen stream when a hot reload changes the tools', async () => {
    const refreshed: string[][] = [];
    const { client } = await connectModern('/fixture', {
      listChanged: {
        tools: {
          onChanged: (error, tools) => {
            if (!error && tools) refreshed.push(tools.map((t) => t.name));
          },
        },
      },
    });
    try {
      // connect() opened the listen stream and the relay acknowledged the tools filter.
      const subscription = client.autoOpenedSubscription;
      expect(subscription?.honoredFilter).toEqual({ toolsListChanged: true });
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('added');
      writeMcpServers(app.configDir, {
        ...servers,
        fixture: relayFixtureServer({ MCP_FIXTURE_EXTRA_TOOL: 'added' }),
      });
      await waitFor(
        () => refreshed.find((names) => names.includes('added')),
        'a refreshed list with the added tool',
        30_000,
      );
      expect(firstText(await client.callTool({ name: 'added', arguments: {} }))).toBe('added');
    } finally {
      writeMcpServers(app.configDir, servers);
      await client.close();
    }
  });

  it('keeps the 2025 session for a client in the default mode', async () => {
    const mcp = await connectMcp(mcpUrl('/everything').href, clientToken, tlsFetch);
    try {
      expect(mcp.client.getProtocolEra()).toBe('legacy');
      expect(mcp.transport.sessionId).toEqual(expect.any(String));
      const echoed = await mcp.client.callTool({ name: 'echo', arguments: { message: 'old' } });
      expect(firstText(echoed)).toBe('Echo: old');
    } finally {
      await mcp.close();
    }
  });

  it('refuses a request for another revision with -32022 and the one it supports', async () => {
    const response = await tlsFetch(mcpUrl('/everything'), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${clientToken}`,
        'MCP-Protocol-Version': '2099-01-01',
        'Mcp-Method': 'tools/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2099-01-01',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 1,
      error: { code: -32022, data: { supported: ['2026-07-28'], requested: '2099-01-01' } },
    });
  });

  it('answers a removed or unknown method 404 -32601, and a request without clientCapabilities 400 -32602', async () => {
    const send = async (
      method: string,
      meta: Record<string, unknown>,
      status: number,
      code: number,
    ) => {
      const response = await tlsFetch(mcpUrl('/everything'), {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          Authorization: `Bearer ${clientToken}`,
          'MCP-Protocol-Version': '2026-07-28',
          'Mcp-Method': method,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { _meta: meta } }),
      });
      expect(response.status, method).toBe(status);
      expect(await response.json(), method).toMatchObject({ id: 7, error: { code } });
    };
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'unknown/method']) {
      await send(method, envelope, 404, -32601);
    }
    const { 'io.modelcontextprotocol/protocolVersion': version } = envelope;
    await send('tools/list', { 'io.modelcontextprotocol/protocolVersion': version }, 400, -32602);
  });
});
