import { hostname } from 'node:os';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { TestAgentServer } from './fixtures/agent-server/test-agent-server.js';
import { echoServer, logLines, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { loggedSoFar } from './support/logged-output.js';

/**
 * The relay in the built app against a test agent server over real TLS (a test CA handed in
 * through NODE_EXTRA_CA_CERTS): hello, tools through the relay, a crash and its restart, the
 * server going away and coming back, and a wrong token.
 *
 * One app and one agent server serve every test (each start costs seconds); beforeEach brings
 * them back to the same state (the agent connected, echo up), so no test relies on another
 * having run before it, and any order passes (`--sequence.shuffle`).
 */
let ca: TestCa;
let server: TestAgentServer;
let app: RunningApp;
const agentToken = newToken();

const connected = () => metric(app.metricsUrl, 'agent_server_connected');
const downInventories = () =>
  server.framesOf('inventory').filter((f) => JSON.stringify(f).includes('"state":"down"')).length;
const echoUp = () =>
  server.inventory().find((s) => s.name === 'echo' && s.state === 'up') !== undefined;

beforeAll(async () => {
  ca = createTestCa();
  server = new TestAgentServer(ca, agentToken);
  await server.start();
  app = await startApp({
    env: {
      SERVICE_AGENT_TOKEN: agentToken,
      SERVICE_SERVER_URL: server.url,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    },
    mcpServers: { mcpServers: { echo: echoServer() } },
  });
});

beforeEach(async () => {
  await waitFor(() => server.connected && echoUp(), 'agent connected with echo up', 30_000);
  expect(await connected()).toBe(1);
});

afterAll(async () => {
  await app?.stop();
  await server?.stop();
});

describe('agent relay (e2e)', () => {
  it('connects with the token in the header only and says hello', async () => {
    // The latest session's: an earlier test may have made the agent reconnect.
    const hello = server.framesOf('hello').at(-1);
    const handshake = server.handshakes.filter((h) => h.accepted).at(-1)!;
    expect(handshake.url).toBe('/agent/v1/connect');
    expect(handshake.headers.authorization).toBe(`Bearer ${agentToken}`);
    expect(handshake.headers['user-agent']).toMatch(/^plant-store-agent\/\d+\.\d+\.\d+/);
    expect(hello).toMatchObject({
      agent: { id: hostname(), version: expect.any(String) as unknown },
    });
    expect(JSON.stringify(hello)).toContain('"name":"echo"');
    expect(server.inventory()[0]?.tools.map((t) => t.name)).toEqual(['echo', 'crash', 'env']);
    expect(await connected()).toBe(1);
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    expect(output).not.toContain(agentToken);
  });

  it('answers initialize from the cache and relays tools/list and tools/call', async () => {
    const init = await server.call('echo', 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'server', version: '1' },
    });
    expect(init.result).toMatchObject({ serverInfo: { name: 'echo-fixture' } });
    server.notify('echo', { jsonrpc: '2.0', method: 'notifications/initialized' });

    const list = await server.call('echo', 'tools/list', {}, 'list-1');
    expect(list.id).toBe('list-1');
    expect((list.result?.tools as { name: string }[]).map((t) => t.name)).toContain('echo');

    const echoed = await server.call('echo', 'tools/call', {
      name: 'echo',
      arguments: { text: 'hello relay' },
    });
    expect(echoed.result).toMatchObject({ content: [{ type: 'text', text: 'hello relay' }] });

    const env = await server.call('echo', 'tools/call', {
      name: 'env',
      arguments: { name: 'SERVICE_AGENT_TOKEN' },
    });
    expect(env.result).toMatchObject({ content: [{ text: '<unset>' }] });
  });

  it('answers a request for an unknown server with -32001', async () => {
    const answer = await server.call('nope', 'tools/list', {}, 99);
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 99,
      error: {
        code: -32001,
        message: 'MCP server "nope" is not available (unknown or not running)',
      },
    });
  });

  it('restarts a crashed server, counts it, and relays again', async () => {
    const restartsBefore =
      (await metric(app.metricsUrl, 'mcp_server_restarts_total{server="echo"}')) ?? 0;
    const downFramesBefore = downInventories();
    const crash = await server.call('echo', 'tools/call', { name: 'crash', arguments: {} });
    expect(crash.error?.code).toBe(-32001);
    await waitFor(
      async () =>
        ((await metric(app.metricsUrl, 'mcp_server_restarts_total{server="echo"}')) ?? 0) >
        restartsBefore,
      'restart counted',
    );
    await waitFor(
      async () => (await metric(app.metricsUrl, 'mcp_server_up{server="echo"}')) === 1,
      'echo up again',
    );
    await waitFor(echoUp, 'inventory shows echo up again');
    expect(downInventories()).toBeGreaterThan(downFramesBefore);
    const echoed = await server.call('echo', 'tools/call', {
      name: 'echo',
      arguments: { text: 'again' },
    });
    expect(echoed.result).toMatchObject({ content: [{ text: 'again' }] });
  });

  it('reconnects after the server restarts', async () => {
    const hellos = server.framesOf('hello').length;
    await server.stop();
    try {
      await waitFor(async () => (await connected()) === 0, 'agent_server_connected 0');
    } finally {
      // Listening again whatever happened, so the tests after this one find their server.
      await server.start();
    }
    await waitFor(() => server.framesOf('hello').length > hellos, 'a new hello', 30_000);
    expect(await connected()).toBe(1);
    const echoed = await server.call('echo', 'tools/call', {
      name: 'echo',
      arguments: { text: 'back' },
    });
    expect(echoed.result).toMatchObject({ content: [{ text: 'back' }] });
  });

  it('with a wrong token: no session, a clear log line, agent_server_connected 0', async () => {
    const wrongToken = newToken();
    const hellos = server.framesOf('hello').length;
    const rejectedBefore = server.handshakes.filter((h) => !h.accepted).length;
    const wrong = await startApp({
      env: {
        SERVICE_AGENT_TOKEN: wrongToken,
        SERVICE_SERVER_URL: server.url,
        NODE_EXTRA_CA_CERTS: ca.caFile,
      },
    });
    try {
      await waitFor(
        () => logLines(wrong.output(), (l) => l.msg === 'agent token rejected by server').at(0),
        'token rejected log line',
      );
      expect(server.handshakes.filter((h) => !h.accepted).length).toBeGreaterThan(rejectedBefore);
      expect(server.framesOf('hello')).toHaveLength(hellos);
      expect(await metric(wrong.metricsUrl, 'agent_server_connected')).toBe(0);
      expect(wrong.output()).not.toContain(wrongToken);
    } finally {
      await wrong.stop();
    }
  });

  it('verifies TLS even with NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment', async () => {
    const hellos = server.framesOf('hello').length;
    const handshakes = server.handshakes.length;
    // The test CA is not trusted here (no NODE_EXTRA_CA_CERTS): only the variable could let
    // the connection through, and it must not.
    const insecure = await startApp({
      env: {
        SERVICE_AGENT_TOKEN: agentToken,
        SERVICE_SERVER_URL: server.url,
        NODE_TLS_REJECT_UNAUTHORIZED: '0',
      },
    });
    try {
      const lastError = await waitFor(async () => {
        const health = (await (await fetch(`${insecure.healthUrl}/health`)).json()) as {
          details: { agentServer: { lastError?: string } };
        };
        return health.details.agentServer.lastError;
      }, 'a failed connection attempt');
      expect(lastError).toMatch(/certificate/i);
      expect(server.handshakes).toHaveLength(handshakes);
      expect(server.framesOf('hello')).toHaveLength(hellos);
      expect(await metric(insecure.metricsUrl, 'agent_server_connected')).toBe(0);
    } finally {
      await insecure.stop();
    }
  });
});
