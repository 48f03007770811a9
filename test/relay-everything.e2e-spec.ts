import { ProtocolError } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestCa } from './fixtures/agent-server/test-ca.js';
import { metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  everythingServer,
  firstText,
  inspectorCli,
  relayFixtureServer,
  shopServersUp,
  writeMcpServers,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp } from './support/app-process.js';
import type { RunningRelay } from './support/relay-process.js';

/**
 * The whole path with parts nobody here wrote, over TLS from a test CA: the official SDK's
 * Streamable HTTP client -> the built relay server -> the built service as agent `shop` -> two
 * stdio MCP servers it supervises: `everything` (`@modelcontextprotocol/server-everything` from
 * npm) and `fixture` (test/fixtures/mcp-relay-fixture-server.mjs, for a 1 MiB result, a
 * cancellation the server sees, and a crash mid-call). The MCP Inspector's command-line client
 * (`@modelcontextprotocol/inspector`, run as `mcp-inspector --cli`) takes the same path.
 *
 * One relay and one agent serve every test; beforeEach waits until both servers are up again
 * (a test may restart one), so the tests pass in any order.
 */
const agentToken = newToken();
const clientToken = newToken();
const MiB = 1024 * 1024;

let ca: TestCa;
let tlsFetch: typeof fetch;
let relay: RunningRelay;
let app: RunningApp;

const servers = { everything: everythingServer(), fixture: relayFixtureServer() };
const mcpUrl = (server: string) => `https://localhost:${relay.port}/mcp/shop/${server}`;
const connect = (server: string) => connectMcp(mcpUrl(server), clientToken, tlsFetch);

const serversUp = () => shopServersUp(relay);
const shopMetric = (series: string) => metric(app.metricsUrl, series);

beforeAll(async () => {
  ({ ca, tlsFetch, relay, app } = await startShopPath(servers, agentToken, clientToken));
});

// A test may restart a server: each starts once both are up again.
beforeEach(() => untilShopServersUp(relay, Object.keys(servers)));

afterAll(() => stopShopPath({ app, relay }));

describe('server-everything through agent and relay, with the official SDK client (e2e)', () => {
  it('initializes, lists the tools and calls them with arguments', async () => {
    const mcp = await connect('everything');
    try {
      expect(mcp.transport.sessionId).toEqual(expect.any(String));
      expect(mcp.client.getServerVersion()?.name).toMatch(/everything/);
      const tools = (await mcp.client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(
        expect.arrayContaining(['echo', 'get-sum', 'trigger-long-running-operation']),
      );
      const echoed = await mcp.client.callTool({
        name: 'echo',
        arguments: { message: 'through agent and relay' },
      });
      expect(firstText(echoed)).toBe('Echo: through agent and relay');
      const sum = await mcp.client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
      expect(firstText(sum)).toContain('42');
    } finally {
      await mcp.close();
    }
  });

  it('carries 1 MiB each way: a 1 MiB result from ours, a 1 MiB echo from everything', async () => {
    const fixture = await connect('fixture');
    const everything = await connect('everything');
    try {
      const large = await fixture.client.callTool({ name: 'large', arguments: { bytes: MiB } });
      const text = firstText(large);
      expect(text).toHaveLength(MiB);
      expect(/^x+$/.test(text)).toBe(true);

      const message = 'y'.repeat(MiB);
      const echoed = await everything.client.callTool({ name: 'echo', arguments: { message } });
      expect(firstText(echoed)).toBe(`Echo: ${message}`);
    } finally {
      await fixture.close();
      await everything.close();
    }
  });

  it("streams the long-running operation's progress before its result", async () => {
    const mcp = await connect('everything');
    try {
      const progress: { progress: number; total?: number }[] = [];
      const result = await mcp.client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
        { onprogress: (p) => progress.push({ progress: p.progress, total: p.total }) },
      );
      expect(firstText(result)).toContain('Long running operation completed');
      expect(progress).toEqual([1, 2, 3, 4].map((step) => ({ progress: step, total: 4 })));
    } finally {
      await mcp.close();
    }
  });

  it('cancels a call: the abort ends it at the client and the MCP server sees notifications/cancelled', async () => {
    const mcp = await connect('fixture');
    try {
      const cancelled = async () =>
        Number(firstText(await mcp.client.callTool({ name: 'cancellations', arguments: {} })));
      const before = await cancelled();
      const inFlight = () => metric(relay.metricsUrl, 'relay_mcp_requests_in_flight{agent="shop"}');
      const abort = new AbortController();
      const call = mcp.client.callTool(
        { name: 'wait', arguments: { seconds: 600 } },
        { signal: abort.signal },
      );
      const settled = call.then(
        () => 'answered',
        (error: unknown) => error,
      );
      await waitFor(async () => (await inFlight()) === 1, 'the wait call in flight at the relay');
      // The precondition: the MCP server runs it (a cancel that overtakes its call is ignored).
      const waiting = async () =>
        Number(firstText(await mcp.client.callTool({ name: 'waiting', arguments: {} })));
      await waitFor(async () => (await waiting()) === 1, 'the wait call at the MCP server');
      abort.abort('the user gave up');
      expect(await settled).not.toBe('answered');
      await waitFor(async () => (await cancelled()) === before + 1, 'the server saw the cancel');
      await waitFor(async () => (await inFlight()) === 0, 'nothing left in flight');
    } finally {
      await mcp.close();
    }
  });

  it('answers a call whose server crashes mid-call with a JSON-RPC error; the agent restarts it', async () => {
    const restarts = async () =>
      (await shopMetric('mcp_server_restarts_total{server="fixture"}')) ?? 0;
    const restartsBefore = await restarts();
    const mcp = await connect('fixture');
    const everything = await connect('everything');
    try {
      const pidBefore = firstText(await mcp.client.callTool({ name: 'pid', arguments: {} }));
      const progress: string[] = [];
      const crash = await mcp.client
        .callTool(
          { name: 'crash', arguments: {} },
          { onprogress: (p) => progress.push(p.message ?? '') },
        )
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      // Mid-call: the server had started on it (its progress arrived) when it exited.
      expect(progress).toEqual(['about to crash']);
      expect(crash).toBeInstanceOf(ProtocolError);
      expect((crash as ProtocolError).code).toBe(-32001);
      expect((crash as ProtocolError).message).toContain('exited or stopped before answering');

      // The relay and the agent keep serving the other server meanwhile.
      const echoed = await everything.client.callTool({
        name: 'echo',
        arguments: { message: 'still here' },
      });
      expect(firstText(echoed)).toBe('Echo: still here');

      await waitFor(async () => (await restarts()) > restartsBefore, 'the restart counted');
      await waitFor(async () => (await serversUp()).includes('fixture'), 'fixture up again');
      // The same session reaches the new process.
      const pidAfter = firstText(await mcp.client.callTool({ name: 'pid', arguments: {} }));
      expect(pidAfter).not.toBe(pidBefore);
    } finally {
      await mcp.close();
      await everything.close();
    }
  });

  it('hot-reloads mcp-servers.json: a new server answers, a changed entry changes its tool list', async () => {
    const extra = (tool: string) => relayFixtureServer({ MCP_FIXTURE_EXTRA_TOOL: tool });
    // Before: nothing called "extra" runs, the relay has nowhere to send it.
    const missing = await connect('extra').then(
      () => 'connected',
      (error: unknown) => error,
    );
    expect(missing).toBeInstanceOf(ProtocolError);
    expect((missing as ProtocolError).code).toBe(-32001);

    writeMcpServers(app.configDir, { ...servers, extra: extra('first') });
    let mcp: Awaited<ReturnType<typeof connect>> | undefined;
    try {
      await waitFor(async () => (await serversUp()).includes('extra'), 'extra up at the relay');
      mcp = await connect('extra');
      const client = mcp.client;
      const names = async () => (await client.listTools()).tools.map((t) => t.name);
      expect(await names()).toContain('first');

      writeMcpServers(app.configDir, { ...servers, extra: extra('second') });
      // The same session, asking again: the restarted server's list.
      const changed = await waitFor(async () => {
        const list = await names().catch(() => undefined);
        return list?.includes('second') ? list : undefined;
      }, 'the changed tool list');
      expect(changed).not.toContain('first');
      const called = await client.callTool({ name: 'second', arguments: {} });
      expect(firstText(called)).toBe('second');
    } finally {
      await mcp?.close();
      writeMcpServers(app.configDir, servers);
      await waitFor(async () => !(await serversUp()).includes('extra'), 'extra removed again');
    }
  });
});

describe('the MCP Inspector CLI through agent and relay (e2e)', () => {
  /** `mcp-inspector --cli <url> --transport http --header ... --format json`, as in the README. */
  const cli = (token: string, ...args: string[]) =>
    inspectorCli(
      [
        mcpUrl('everything'),
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${token}`,
        '--format',
        'json',
        ...args,
      ],
      ca.caFile,
    );

  it('lists the tools and calls one', async () => {
    const list = await cli(clientToken, '--method', 'tools/list');
    expect(list.code, list.stderr).toBe(0);
    const tools = (JSON.parse(list.stdout) as { result: { tools: { name: string }[] } }).result
      .tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'get-sum']));

    const call = await cli(
      clientToken,
      '--method',
      'tools/call',
      '--tool-name',
      'get-sum',
      '--tool-args-json',
      '{"a":2,"b":40}',
    );
    expect(call.code, call.stderr).toBe(0);
    const result = (JSON.parse(call.stdout) as { result: { content?: unknown; isError?: boolean } })
      .result;
    expect(result.isError ?? false).toBe(false);
    expect(firstText(result)).toContain('42');
  });

  it("reports the relay's 401 as auth_required when its token is wrong", async () => {
    const failuresBefore =
      (await metric(relay.metricsUrl, 'relay_client_auth_failures_total')) ?? 0;
    // --stored-auth-only: no interactive OAuth attempt (the CLI's advice for CI).
    const refused = await cli(newToken(), '--method', 'tools/list', '--stored-auth-only');
    expect(refused.code).not.toBe(0);
    const lastLine = (refused.stdout + refused.stderr).trim().split('\n').at(-1) ?? '';
    expect(JSON.parse(lastLine)).toMatchObject({ error: { code: 'auth_required' } });
    expect(await metric(relay.metricsUrl, 'relay_client_auth_failures_total')).toBeGreaterThan(
      failuresBefore,
    );
  });
});
