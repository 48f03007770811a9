import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  descendants,
  echoServer,
  logLines,
  metric,
  survivors,
  waitFor,
} from './fixtures/mcp-e2e-support.js';
import { type RunningApp, startApp } from './support/app-process.js';

/**
 * The MCP supervisor in the built app: servers from mcp-servers.json come up and show in the
 * metrics, a broken entry hurts no other, hot reload adds and removes servers (and keeps the
 * running set on a bad file), and SIGTERM leaves no process behind.
 */
const apps: RunningApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.stop('SIGKILL')));
});

async function start(mcpServers: Record<string, unknown>): Promise<RunningApp> {
  const app = await startApp({ mcpServers: { mcpServers } });
  apps.push(app);
  return app;
}

/** Replaces the file the way Kubernetes and most editors do: write aside, then rename. */
function rewriteConfig(app: RunningApp, content: string): void {
  const file = join(app.configDir, 'mcp-servers.json');
  writeFileSync(`${file}.tmp`, content);
  renameSync(`${file}.tmp`, file);
}

const up = (app: RunningApp, server: string) =>
  metric(app.metricsUrl, `mcp_server_up{server="${server}"}`);

describe('MCP supervisor (e2e)', () => {
  it('starts the servers, shows them in the metrics, and survives a command that does not exist', async () => {
    const app = await start({
      echo: echoServer(),
      broken: { command: '/nonexistent/mcp-server', args: [] },
    });
    await waitFor(async () => (await up(app, 'echo')) === 1, 'echo up');
    expect(await metric(app.metricsUrl, 'mcp_server_tools{server="echo"}')).toBe(3);
    expect(await metric(app.metricsUrl, 'mcp_server_restarts_total{server="echo"}')).toBe(0);
    await waitFor(
      async () =>
        ((await metric(app.metricsUrl, 'mcp_server_restarts_total{server="broken"}')) ?? 0) >= 1,
      'broken server retried',
    );
    expect(await up(app, 'broken')).toBe(0);
    expect(app.child.exitCode).toBeNull();
    expect(
      logLines(app.output(), (l) => l.mcpServer === 'broken' && String(l.msg).includes('ENOENT')),
    ).not.toHaveLength(0);
  });

  it('hot-reloads mcp-servers.json: adds, removes, and keeps the running set on a bad file', async () => {
    const app = await start({ echo: echoServer() });
    await waitFor(async () => (await up(app, 'echo')) === 1, 'echo up');
    const echoPid = descendants(app.child.pid!).find((p) => p.ppid === app.child.pid)?.pid;
    expect(echoPid).toBeDefined();

    rewriteConfig(
      app,
      JSON.stringify({ mcpServers: { echo: echoServer(), second: echoServer() } }),
    );
    await waitFor(async () => (await up(app, 'second')) === 1, 'second up');
    // echo was not touched
    expect(descendants(app.child.pid!).some((p) => p.pid === echoPid)).toBe(true);

    rewriteConfig(app, JSON.stringify({ mcpServers: { second: echoServer() } }));
    await waitFor(async () => (await up(app, 'echo')) === undefined, 'echo removed');
    await waitFor(() => survivors([echoPid!], []).length === 0, 'echo process gone');
    expect(await up(app, 'second')).toBe(1);

    rewriteConfig(app, '{"mcpServers": {"third": {"command": 42}}}');
    await waitFor(
      () => logLines(app.output(), (l) => String(l.msg).includes('was not reloaded')).at(0),
      'rejected reload logged',
    );
    expect(await up(app, 'second')).toBe(1);
    expect(await up(app, 'third')).toBeUndefined();
  });

  it('leaves no process behind after SIGTERM, grandchildren included', async () => {
    const app = await start({
      spawner: echoServer({ MCP_FIXTURE_GRANDCHILD: '1' }),
      plain: echoServer(),
    });
    await waitFor(
      async () => (await up(app, 'spawner')) === 1 && (await up(app, 'plain')) === 1,
      'both up',
    );
    const tree = descendants(app.child.pid!);
    expect(tree.some((p) => p.command === 'sleep' || p.command === 'sh')).toBe(true);
    const pgids = [...new Set(tree.map((p) => p.pgid))];

    expect(await app.stop('SIGTERM')).toBe(0);
    expect(logLines(app.output(), (l) => l.msg === 'stopping MCP servers')).toHaveLength(1);
    await waitFor(
      () =>
        survivors(
          tree.map((p) => p.pid),
          pgids,
        ).length === 0,
      'no survivors',
      3_000,
    ).catch(() => undefined);
    expect(
      survivors(
        tree.map((p) => p.pid),
        pgids,
      ),
    ).toEqual([]);
  });

  // SIGHUP once killed Node at once and left every MCP process group running. A signal the app
  // does not handle itself still ends it (same signal), but the groups go first, and the log
  // lines still batched are written (the signal raised again skips Node's 'exit').
  it.each(['SIGHUP', 'SIGUSR2', 'SIGALRM'] as const)(
    'leaves no process behind after %s either',
    async (signal) => {
      const app = await start({ spawner: echoServer({ MCP_FIXTURE_GRANDCHILD: '1' }) });
      await waitFor(async () => (await up(app, 'spawner')) === 1, 'spawner up');
      const tree = descendants(app.child.pid!);
      expect(tree.some((p) => p.command === 'sleep')).toBe(true);
      const pgids = [...new Set(tree.map((p) => p.pgid))];
      expect((await fetch(`${app.apiUrl}/plants`, { method: 'PATCH' })).status).toBe(401);

      app.child.kill(signal);
      await app.exited;
      expect(app.output()).toContain('"method":"PATCH"');
      await waitFor(
        () =>
          survivors(
            tree.map((p) => p.pid),
            pgids,
          ).length === 0,
        'no survivors',
        3_000,
      ).catch(() => undefined);
      expect(
        survivors(
          tree.map((p) => p.pid),
          pgids,
        ),
      ).toEqual([]);
    },
  );
});
