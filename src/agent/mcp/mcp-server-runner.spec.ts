import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { McpServerRunner } from './mcp-server-runner.js';
import { DEFAULT_RUNNER_TIMINGS, type RunnerTimings } from './runner-timings.js';

const FIXTURE = resolve(import.meta.dirname, '../../../test/fixtures/mcp-echo-server.mjs');
const HOSTILE = resolve(import.meta.dirname, '../../../test/fixtures/mcp-hostile-server.mjs');

const FAST: RunnerTimings = {
  ...DEFAULT_RUNNER_TIMINGS,
  initializeTimeoutMs: 5_000,
  pingIntervalMs: 200,
  pingTimeoutMs: 300,
  killGraceMs: 500,
  crashLoopAfter: 3,
  backoff: { initialMs: 50, maxMs: 200, jitterRatio: 0 },
};

const runners: McpServerRunner[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
});

function setup(
  spec: { command?: string; args?: string[]; env?: Record<string, string> },
  timings: Partial<RunnerTimings> = {},
) {
  const logLines: string[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  );
  const relayed: JSONRPCMessage[] = [];
  const events = { restarted: 0, sessionClosed: 0 };
  const runner = new McpServerRunner(
    {
      name: 'echo',
      command: spec.command ?? process.execPath,
      args: spec.args ?? [FIXTURE],
      env: spec.env ?? {},
      instances: 'shared',
      maxInstances: 3,
      instanceIdleSeconds: 300,
    },
    {
      cwd: process.cwd(),
      parentEnv: process.env,
      logger,
      timings: { ...FAST, ...timings },
      clientInfo: { name: 'test', version: '0.0.0' },
      hooks: {
        changed: () => undefined,
        restarted: () => events.restarted++,
        relayMessage: (_server, message) => relayed.push(message),
        sessionClosed: () => events.sessionClosed++,
      },
    },
  );
  runners.push(runner);
  runner.start();
  return { runner, relayed, events, logLines };
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('McpServerRunner', () => {
  it('starts the server, lists its tools and keeps its initialize result', async () => {
    const { runner } = setup({});
    await waitFor(() => runner.state === 'up');
    expect(runner.tools.map((tool) => tool.name)).toEqual(['echo', 'crash', 'env']);
    expect(runner.session?.initializeResult).toMatchObject({
      serverInfo: { name: 'echo-fixture' },
    });
    const { pid } = runner.status();
    expect(pid).toEqual(expect.any(Number));
    await runner.stop();
    expect(runner.status()).toMatchObject({ state: 'down', pid: null });
    expect(alive(pid!)).toBe(false);
  });

  it('logs "MCP server up" with the child pid as serverPid, never a second pid key', async () => {
    const { runner, logLines } = setup({});
    await waitFor(() => logLines.some((line) => line.includes('"msg":"MCP server up"')));
    const line = logLines.find((l) => l.includes('"msg":"MCP server up"'))!;
    // JSON.parse keeps the last of two equal keys: count them in the raw line.
    expect(line.match(/"pid":/g)).toHaveLength(1);
    expect(JSON.parse(line)).toMatchObject({ pid: process.pid, serverPid: runner.status().pid });
  });

  it('relays a request and hands its response to the relay', async () => {
    const { runner, relayed } = setup({});
    await waitFor(() => runner.state === 'up');
    await runner.session!.send({
      jsonrpc: '2.0',
      id: 'relay:1',
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'hi' } },
    });
    await waitFor(() => relayed.length > 0);
    expect(relayed[0]).toMatchObject({ id: 'relay:1', result: { content: [{ text: 'hi' }] } });
  });

  it('restarts a crashed server and counts the restart', async () => {
    const { runner, events } = setup({});
    await waitFor(() => runner.state === 'up');
    const firstPid = runner.status().pid;
    await runner.session!.send({
      jsonrpc: '2.0',
      id: 'relay:2',
      method: 'tools/call',
      params: { name: 'crash', arguments: {} },
    });
    await waitFor(() => runner.state !== 'up');
    expect(runner.status().pid).toBeNull();
    expect(events.sessionClosed).toBe(1);
    await waitFor(() => runner.state === 'up');
    expect(runner.status()).toMatchObject({ restarts: 1, lastError: null });
    expect(runner.status().pid).not.toBe(firstPid);
    expect(events.restarted).toBe(1);
  });

  it('survives a command that does not exist and shows crash-looping after repeated failures', async () => {
    const { runner } = setup({ command: '/nonexistent/mcp-server' });
    await waitFor(() => runner.state === 'crash-looping');
    expect(runner.status().lastError).toContain('ENOENT');
    expect(runner.status().restarts).toBeGreaterThanOrEqual(2);
  });

  it('fails the start at once when the child dies during initialize', async () => {
    const started = Date.now();
    const { runner, logLines } = setup(
      { args: ['-e', 'process.stderr.write("bad config\\n"); process.exit(2)'] },
      {
        initializeTimeoutMs: 20_000,
        backoff: { initialMs: 60_000, maxMs: 60_000, jitterRatio: 0 },
      },
    );
    await waitFor(() => runner.status().lastError !== null);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(runner.status()).toMatchObject({
      state: 'down',
      lastError: 'exited with code 2 during start',
    });
    expect(logLines.some((line) => line.includes('"msg":"bad config"'))).toBe(true);
    // In the log (with the failure), never in the status /health shows.
    expect(JSON.stringify(runner.status())).not.toContain('bad config');
  });

  it('fails the start when initialize gets no answer in time', async () => {
    const { runner } = setup(
      { args: ['-e', 'setInterval(() => {}, 1000)'] },
      { initializeTimeoutMs: 300, backoff: { initialMs: 60_000, maxMs: 60_000, jitterRatio: 0 } },
    );
    await waitFor(() => runner.status().lastError !== null);
    expect(runner.status().state).toBe('down');
    expect(runner.status().lastError).toMatch(/timed out|timeout/i);
  });

  it("never shows the child's own error text (its secrets) in the status /health shows", async () => {
    const secret = 'initialize-secret-4711';
    const child = [
      "process.stdin.on('data', (chunk) => {",
      '  for (const line of chunk.toString().split("\\n").filter(Boolean)) {',
      '    const { id } = JSON.parse(line);',
      '    if (id === undefined) continue;',
      '    const message = `bad token ${process.env.API_TOKEN}`;',
      '    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32000, message } }) + "\\n");',
      '  }',
      '});',
    ].join('\n');
    const { runner, logLines } = setup(
      { args: ['-e', child], env: { API_TOKEN: secret } },
      { backoff: { initialMs: 60_000, maxMs: 60_000, jitterRatio: 0 } },
    );
    await waitFor(() => runner.status().lastError !== null);
    expect(runner.status().lastError).toBe(
      'initialize failed: the server answered an error (see the logs)',
    );
    expect(JSON.stringify(runner.status())).not.toContain(secret);
    // The child's words stay in the log, for the operator.
    expect(logLines.join('')).toContain(`bad token ${secret}`);
  });

  it('restarts a server that stops answering pings', async () => {
    const { runner } = setup({});
    await waitFor(() => runner.state === 'up');
    const pid = runner.status().pid!;
    process.kill(pid, 'SIGSTOP');
    await waitFor(() => runner.status().lastError?.startsWith('ping failed') ?? false);
    await waitFor(() => runner.state === 'up');
    expect(runner.status().restarts).toBe(1);
    await waitFor(() => !alive(pid));
  });

  it('stop() during the teardown of a failed attempt waits for it and leaves no process', async () => {
    // A stopped child ignores SIGTERM until the kill grace runs out: a long teardown.
    const { runner } = setup({}, { killGraceMs: 1_500 });
    await waitFor(() => runner.state === 'up');
    const pid = runner.status().pid!;
    process.kill(pid, 'SIGSTOP');
    await waitFor(() => runner.status().lastError?.startsWith('ping failed') ?? false);
    expect(alive(pid)).toBe(true);
    await runner.stop();
    expect(alive(pid)).toBe(false);
  });

  it('kills grandchildren with the process group on stop', async () => {
    const { runner, logLines } = setup({ env: { MCP_FIXTURE_GRANDCHILD: '1' } });
    await waitFor(() => runner.state === 'up');
    const line = logLines.find((l) => l.includes('"msg":"grandchild pid'));
    const grandchild = Number(/grandchild pid (\d+)/.exec(line ?? '')?.[1]);
    expect(alive(grandchild)).toBe(true);
    await runner.stop();
    await waitFor(() => !alive(grandchild), 2_000);
  });

  it('drains a flood of stderr, rate-limits it in the log and stays up', async () => {
    const { runner, logLines } = setup(
      { env: { MCP_FIXTURE_STDERR_LINES: '5000' } },
      { stderr: { burst: 10, ratePerSecond: 1 } },
    );
    await waitFor(() => runner.state === 'up');
    await runner.stop();
    const stderrLines = logLines.filter((l) => l.includes('"stream":"stderr"'));
    expect(stderrLines.length).toBeLessThan(20);
    expect(logLines.join('')).toMatch(/\d+ stderr lines dropped/);
    expect(logLines.join('')).toContain('"mcpServer":"echo"');
  });

  it('passes only the safe environment and the entry env to the child', async () => {
    process.env.SERVICE_AGENT_TOKEN = 'do-not-leak';
    try {
      const { runner, relayed } = setup({ env: { GREETING: 'hello' } });
      await waitFor(() => runner.state === 'up');
      for (const [i, name] of ['SERVICE_AGENT_TOKEN', 'GREETING'].entries()) {
        await runner.session!.send({
          jsonrpc: '2.0',
          id: `relay:env${i}`,
          method: 'tools/call',
          params: { name: 'env', arguments: { name } },
        });
      }
      await waitFor(() => relayed.length === 2);
      const texts = relayed.map((m) => JSON.stringify(m));
      expect(texts[0]).toContain('<unset>');
      expect(texts[1]).toContain('hello');
    } finally {
      delete process.env.SERVICE_AGENT_TOKEN;
    }
  });

  describe('restarts a child for what it sends unasked, and stays in control', () => {
    const NO_RETRY = { backoff: { initialMs: 60_000, maxMs: 60_000, jitterRatio: 0 } };
    const callTool = (runner: McpServerRunner, name: string) =>
      runner.session!.send({
        jsonrpc: '2.0',
        id: `relay:${name}`,
        method: 'tools/call',
        params: { name, arguments: {} },
      });

    it('valid notifications flooded beyond their budget', async () => {
      const { runner, relayed } = setup(
        { args: [HOSTILE] },
        { ...NO_RETRY, stdout: { notificationBudget: { burst: 200, ratePerSecond: 20 } } },
      );
      await waitFor(() => runner.state === 'up');
      await callTool(runner, 'notify-flood');
      await waitFor(() => runner.status().unsolicited.restarts === 1);
      expect(runner.status().lastError).toMatch(/^sent too many messages nobody asked for \(/);
      // Notifications within the budget still reached the relay.
      expect(relayed.some((m) => 'method' in m && m.method === 'notifications/message')).toBe(true);
    });

    it('answers to ids nobody waits for: dropped, logged rate-limited, then restarted', async () => {
      const { runner, relayed, logLines } = setup(
        { args: [HOSTILE] },
        { ...NO_RETRY, stdout: { unknownAnswerBudget: { burst: 50, ratePerSecond: 5 } } },
      );
      await waitFor(() => runner.state === 'up');
      await callTool(runner, 'unknown-answers');
      await waitFor(() => runner.status().unsolicited.restarts === 1);
      expect(runner.status().unsolicited.unknownAnswers).toBeGreaterThan(50);
      expect(relayed.some((m) => 'id' in m && m.id === 'unknown-1')).toBe(false);
      const warned = logLines.filter((l) => l.includes('request id nobody waits for'));
      expect(warned.length).toBeGreaterThan(0);
      expect(warned.length).toBeLessThan(20);
      expect(warned[0]).toContain('"level":40');
    });

    it('a stdout line that never ends', async () => {
      const { runner } = setup(
        { args: [HOSTILE] },
        {
          ...NO_RETRY,
          stdout: {
            maxLineBytes: 1024 * 1024,
            byteBudget: { burst: 4 * 1024 * 1024, ratePerSecond: 256 * 1024 },
          },
        },
      );
      await waitFor(() => runner.state === 'up');
      await callTool(runner, 'endless-line');
      await waitFor(() => runner.status().stdoutGarbage.restarts === 1);
      expect(runner.status().lastError).toMatch(/^wrote too much to stdout/);
    });
  });
});
