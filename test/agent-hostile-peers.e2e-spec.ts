import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { TestAgentServer } from './fixtures/agent-server/test-agent-server.js';
import { hostileServer, logLines, waitFor } from './fixtures/mcp-e2e-support.js';
import { newToken, type RunningApp, startApp } from './support/app-process.js';
import { call } from './support/http.js';
import { loggedSoFar } from './support/logged-output.js';

/**
 * The agent shares its process with the plant API: nothing its peers send may stop or stall it.
 * The built app runs hostile MCP servers (test/fixtures/mcp-hostile-server.mjs) behind the test
 * agent server, which itself sends junk; after each attack the process is still running and a
 * POST /plants still answers 200.
 */
let ca: TestCa;
let server: TestAgentServer;
let app: RunningApp;
let nextPlant = 1;
const agentToken = newToken();
const SERVERS = [
  'victim',
  'hijacker',
  'deep',
  'flooder',
  'notifier',
  'unknowns',
  'endless',
] as const;
/** What `victim` prints to stderr on request: an MCP server's own credential. */
const childSecret = newToken();

const allUp = () =>
  SERVERS.every((name) => server.inventory().some((s) => s.name === name && s.state === 'up'));

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

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

interface HealthServer {
  name: string;
  state: string;
  lastError: string | null;
  stdoutGarbage: { lines: number; restarts: number };
  unsolicited: { unknownAnswers: number; restarts: number };
}

/** One MCP server as the unauthenticated /health shows it. */
async function healthOf(name: string): Promise<HealthServer | undefined> {
  const health = await call(`${app.healthUrl}/health`);
  expect(health.status).toBe(200);
  const { servers } = (health.json as { details: { mcpServers: { servers: HealthServer[] } } })
    .details.mcpServers;
  return servers.find((s) => s.name === name);
}

/**
 * Starts an attack by tool call on `name`, waits until /health shows the restart it earns, then
 * checks the API still serves and the server comes back.
 */
async function restartedFor(
  name: string,
  tool: string,
  restarts: (s: HealthServer) => number,
): Promise<HealthServer> {
  const before = await healthOf(name);
  expect(before?.state).toBe('up');
  // Answered either way: by the child, or with an error once its restart ends the session.
  const attack = server.call(name, 'tools/call', { name: tool, arguments: {} });
  const restarted = await waitFor(async () => {
    const status = await healthOf(name);
    return status && restarts(status) > restarts(before!) && status;
  }, `${name} restarted for ${tool}`);
  await attack;
  await storeStillServes();
  await waitFor(async () => (await healthOf(name))?.state === 'up', `${name} up again`);
  return restarted;
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
    },
    mcpServers: {
      mcpServers: {
        ...Object.fromEntries(
          SERVERS.map((name) => [
            name,
            hostileServer(name === 'victim' ? { HOSTILE_SECRET: childSecret } : {}),
          ]),
        ),
        // Lists a tool whose inputSchema nests 6,000 deep: it can never come up.
        deeptool: hostileServer({ HOSTILE_DEEP_TOOL: '1' }),
        // Answers initialize with an error quoting its secret: never comes up either.
        initerror: hostileServer({ HOSTILE_INIT_ERROR: '1', HOSTILE_SECRET: childSecret }),
      },
    },
  });
  await waitFor(allUp, 'hostile servers up in the inventory');
});

afterAll(async () => {
  await app?.stop();
  await server?.stop();
});

describe('hostile peers of the agent (e2e)', () => {
  it('answers -32004 for an MCP answer nested 6,000 deep, and stays up', async () => {
    const answer = await server.call('deep', 'tools/call', { name: 'deep', arguments: {} });
    expect(answer.error).toEqual({
      code: -32004,
      message: 'answer of the MCP server dropped: nested deeper than 99 levels',
    });
    await storeStillServes();
    const echoed = await server.call('deep', 'tools/call', {
      name: 'echo',
      arguments: { text: 'still here' },
    });
    expect(echoed.result).toMatchObject({ content: [{ text: 'still here' }] });
  });

  it('fails the start of an MCP server whose tools/list nests 6,000 deep, and stays up', async () => {
    const lastError = await waitFor(async () => {
      const health = await call(`${app.healthUrl}/health`);
      expect(health.status).toBe(200);
      const servers = (
        health.json as {
          details: { mcpServers: { servers: { name: string; lastError: string | null }[] } };
        }
      ).details.mcpServers.servers;
      return servers.find((s) => s.name === 'deeptool')?.lastError ?? undefined;
    }, 'deeptool failed to start');
    // /health shows fixed words only (an error's text may come from the child); the log has it.
    expect(lastError).toBe('tools/list failed: the server answered an error (see the logs)');
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    expect(
      logLines(
        output,
        (l) =>
          l.mcpServer === 'deeptool' &&
          String(l.msg).includes('answer of the MCP server dropped: nested deeper than 99 levels'),
      ).length,
    ).toBeGreaterThan(0);
    expect(JSON.stringify(logLines(output, () => true))).not.toContain('call stack');
    expect(server.inventory().find((s) => s.name === 'deeptool')?.state).not.toBe('up');
    await storeStillServes();
  });

  it('drops an unsolicited MCP notification nested 6,000 deep, and stays up', async () => {
    const dropped = (output = app.output()) =>
      logLines(
        output,
        (l) =>
          l.mcpServer === 'deep' &&
          l.msg === 'dropped a line the MCP server wrote to stdout: nested deeper than 99 levels',
      ).length;
    const before = dropped(await loggedSoFar(app, `${app.apiUrl}/plants`));
    const answer = await server.call('deep', 'tools/call', { name: 'deep-notify', arguments: {} });
    expect(answer.result).toMatchObject({ content: [{ text: 'notified' }] });
    await waitFor(() => dropped() > before, 'dropped-notification log line');
    expect(server.frames.some((f) => JSON.stringify(f).includes('notifications/message'))).toBe(
      false,
    );
    await storeStillServes();
  });

  it('survives frames from the relay server nested 10,000 deep, answering the request -32004', async () => {
    server.sendRaw(`{"type":${nested(10_000)}}`);
    server.sendRaw(`{"type":"rpc","server":"victim","message":${nested(10_000)}}`);
    const id = 'deep-request';
    const answered = waitFor(
      () => server.framesOf('rpc').find((f) => (f.message as { id?: unknown }).id === id),
      'answer to the deep request',
    );
    server.sendRaw(
      `{"type":"rpc","server":"victim","message":{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"a":${nested(10_000)}}}}`,
    );
    expect((await answered).message).toEqual({
      jsonrpc: '2.0',
      id,
      error: { code: -32004, message: 'message rejected: nested deeper than 100 levels' },
    });
    await storeStillServes();
  });

  it('counts an answer only from the MCP server the request was sent to', async () => {
    // victim gets relay:<n>, hijacker relay:<n+1> and answers relay:<n> first.
    const slow = server.call('victim', 'tools/call', { name: 'slow', arguments: { ms: 1_500 } });
    const hijack = await server.call('hijacker', 'tools/call', { name: 'hijack', arguments: {} });
    expect(hijack.result).toMatchObject({ content: [{ text: 'hijack sent' }] });
    expect((await slow).result).toMatchObject({ content: [{ text: 'slow done' }] });
    // The hijacker's transport never sent that id: dropped there, before the relay sees it.
    expect(
      logLines(
        app.output(),
        (l) =>
          l.mcpServer === 'hijacker' &&
          l.msg === 'dropped an answer of the MCP server to a request id nobody waits for',
      ),
    ).toHaveLength(1);
  });

  it('logs 50,000 junk frames in a few truncated lines and keeps relaying', async () => {
    const before = logLines(await loggedSoFar(app, `${app.apiUrl}/plants`), () => true).length;
    const junk = `{"type":"junk","padding":"${'x'.repeat(2_000)}"}`;
    for (let i = 0; i < 50_000; i++) server.sendRaw(i % 2 ? junk : 'not json at all');
    const echoed = await server.call(
      'victim',
      'tools/call',
      { name: 'echo', arguments: { text: 'after the junk' } },
      'after-junk',
    );
    expect(echoed.result).toMatchObject({ content: [{ text: 'after the junk' }] });
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    const lines = logLines(output, () => true).slice(before);
    const junkLines = lines.filter((l) => String(l.msg).startsWith('ignored a frame'));
    expect(junkLines.length).toBeGreaterThan(0);
    expect(junkLines.length).toBeLessThanOrEqual(30);
    expect(Math.max(...output.split('\n').map((line) => line.length))).toBeLessThan(2_000);
    await storeStillServes();
  });

  it('refuses relayed requests beyond 1,000 in flight with -32005', async () => {
    const slow = Array.from({ length: 1_000 }, (_, i) =>
      server.call('victim', 'tools/call', { name: 'slow', arguments: { ms: 4_000 } }, `slow-${i}`),
    );
    // The 1,000 are in flight once the child has them; the next one is refused at once.
    const refused = await server.call('victim', 'tools/call', { name: 'echo' }, 'one-too-many');
    expect(refused.error).toEqual({
      code: -32005,
      message: 'too many relayed requests in flight (at most 1000)',
    });
    const answers = await Promise.all(slow);
    expect(answers.filter((a) => a.result !== undefined)).toHaveLength(1_000);
    await storeStillServes();
  });

  it("keeps a child's stderr out of /health (unauthenticated): logs only", async () => {
    const said = await server.call('victim', 'tools/call', {
      name: 'secret-to-stderr',
      arguments: {},
    });
    expect(said.result).toMatchObject({ content: [{ text: 'said it' }] });
    await waitFor(
      () => logLines(app.output(), (l) => String(l.msg).includes(childSecret)).at(0),
      'the stderr line in the log',
    );
    const health = await call(`${app.healthUrl}/health`);
    expect(health.status).toBe(200);
    expect(health.text).toContain('"victim"');
    expect(health.text).not.toContain(childSecret);
    expect(health.text).not.toContain('hostile fixture ready');
  });

  it('restarts an MCP server that floods stdout with garbage, shows it in /health, stays up', async () => {
    const flooderStatus = async () => {
      const health = await call(`${app.healthUrl}/health`);
      expect(health.status).toBe(200);
      const servers = (
        health.json as {
          details: {
            mcpServers: {
              servers: {
                name: string;
                state: string;
                lastError: string | null;
                stdoutGarbage?: { lines: number; restarts: number };
              }[];
            };
          };
        }
      ).details.mcpServers.servers;
      return servers.find((s) => s.name === 'flooder');
    };
    // Answered either way: by the child, or with -32001 once its restart ends the session.
    const flood = server.call('flooder', 'tools/call', {
      name: 'garbage',
      arguments: { lines: 0 },
    });
    const restarted = await waitFor(async () => {
      const status = await flooderStatus();
      return (status?.stdoutGarbage?.restarts ?? 0) >= 1 && status;
    }, 'the flooder restarted for its garbage');
    expect(restarted.lastError).toMatch(
      /^wrote too much to stdout that is not JSON-RPC \(\d+ lines/,
    );
    expect(restarted.stdoutGarbage!.lines).toBeGreaterThan(100);
    await flood;
    await storeStillServes();
    await waitFor(async () => (await flooderStatus())?.state === 'up', 'the flooder up again');
    const echoed = await server.call('flooder', 'tools/call', {
      name: 'echo',
      arguments: { text: 'clean again' },
    });
    expect(echoed.result).toMatchObject({ content: [{ text: 'clean again' }] });
    // Warned about, rate limited: not one log line per garbage line.
    const warned = logLines(
      app.output(),
      (l) => l.mcpServer === 'flooder' && l.stream === 'stdout',
    );
    expect(warned.length).toBeGreaterThan(0);
    expect(warned.length).toBeLessThan(50);
  });

  it('restarts an MCP server that floods valid notifications, shows it in /health', async () => {
    const restarted = await restartedFor('notifier', 'notify-flood', (s) => s.unsolicited.restarts);
    expect(restarted.lastError).toMatch(/^sent too many messages nobody asked for \(/);
  });

  it('restarts an MCP server that floods answers to unknown ids, logged rate-limited', async () => {
    const restarted = await restartedFor(
      'unknowns',
      'unknown-answers',
      (s) => s.unsolicited.restarts,
    );
    expect(restarted.unsolicited.unknownAnswers).toBeGreaterThan(100);
    const warned = logLines(
      app.output(),
      (l) =>
        l.mcpServer === 'unknowns' &&
        l.msg === 'dropped an answer of the MCP server to a request id nobody waits for',
    );
    expect(warned.length).toBeGreaterThan(0);
    expect(warned.length).toBeLessThan(50);
    expect(warned.every((l) => l.level === 40)).toBe(true);
  });

  it('restarts an MCP server that writes a stdout line that never ends', async () => {
    const restarted = await restartedFor(
      'endless',
      'endless-line',
      (s) => s.stdoutGarbage.restarts,
    );
    expect(restarted.lastError).toMatch(/^wrote too much to stdout that is not JSON-RPC/);
  });

  it("shows a fixed description on /health, never the child's error text with its secret", async () => {
    const status = await waitFor(async () => {
      const s = await healthOf('initerror');
      return s?.lastError ? s : undefined;
    }, 'initerror failed to start');
    expect(status.lastError).toBe('initialize failed: the server answered an error (see the logs)');
    const health = await call(`${app.healthUrl}/health`);
    expect(health.text).not.toContain(childSecret);
    // The operator still finds the child's words in the log.
    await waitFor(
      () =>
        logLines(
          app.output(),
          (l) => l.mcpServer === 'initerror' && String(l.msg).includes(childSecret),
        ).at(0),
      "the child's error in the log",
    );
  });

  it('closes the connection on a frame over 4 MiB (1009), reconnects, and stays up', async () => {
    const hellos = server.framesOf('hello').length;
    server.sendRaw(JSON.stringify({ type: 'junk', padding: 'x'.repeat(5 * 1024 * 1024) }));
    await waitFor(() => server.closeCodes.includes(1009), 'close 1009');
    await waitFor(() => server.framesOf('hello').length > hellos, 'a new hello', 30_000);
    expect(
      Math.max(
        ...app
          .output()
          .split('\n')
          .map((line) => line.length),
      ),
    ).toBeLessThan(2_000);
    await storeStillServes();
  });
});
