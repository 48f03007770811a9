import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { Counter, Gauge, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppConfig } from '../../config/app-config.js';
import { Secret } from '../../config/secret.js';
import { DEFAULT_RUNNER_TIMINGS } from './runner-timings.js';
import { McpSupervisorService } from './mcp-supervisor.service.js';

const FIXTURE = resolve(import.meta.dirname, '../../../test/fixtures/mcp-echo-server.mjs');
const echo = { command: process.execPath, args: [FIXTURE] };
/** As the loader fills in an entry without `instances`. */
const SHARED = { instances: 'shared', maxInstances: 3, instanceIdleSeconds: 300 };

const services: McpSupervisorService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.onApplicationShutdown()));
});

function setup(servers: Record<string, object>) {
  const configDir = mkdtempSync(join(tmpdir(), 'mcp-service-'));
  const write = (content: unknown) =>
    writeFileSync(
      join(configDir, 'mcp-servers.json'),
      typeof content === 'string' ? content : JSON.stringify(content),
    );
  write({ mcpServers: servers });
  const registry = new Registry();
  const up = new Gauge({
    name: 'mcp_server_up',
    help: 'x',
    labelNames: ['server'],
    registers: [registry],
  });
  const restarts = new Counter({
    name: 'mcp_server_restarts_total',
    help: 'x',
    labelNames: ['server'],
    registers: [registry],
  });
  const tools = new Gauge({
    name: 'mcp_server_tools',
    help: 'x',
    labelNames: ['server'],
    registers: [registry],
  });
  const instances = new Gauge({
    name: 'mcp_server_instances',
    help: 'x',
    labelNames: ['server'],
    registers: [registry],
  });
  const refused = new Counter({
    name: 'mcp_server_instances_refused_total',
    help: 'x',
    labelNames: ['server', 'reason'],
    registers: [registry],
  });
  const config = {
    version: '0.0.0-test',
    mcp: {
      configDir,
      configDirExplicit: true,
      file: join(configDir, 'mcp-servers.json'),
      absent: false,
      servers: Object.entries(servers).map(([name, spec]) => ({
        name,
        ...echo,
        env: {},
        ...SHARED,
        ...spec,
      })),
      reposDir: '/nonexistent-repos',
      parentEnv: new Secret({ PATH: process.env.PATH, ECHO_ARG: 'from-env' }),
    },
  } as unknown as AppConfig; // only the fields the service reads
  const logger = pino({ level: 'silent' });
  const timings = { ...DEFAULT_RUNNER_TIMINGS, killGraceMs: 500 };
  const service = new McpSupervisorService(
    config,
    logger,
    up,
    restarts,
    tools,
    instances,
    refused,
    timings,
  );
  services.push(service);
  return { service, write, registry };
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const states = (service: McpSupervisorService) =>
  Object.fromEntries(service.snapshot().map((s) => [s.name, s.state]));

describe('McpSupervisorService', () => {
  it('starts the configured servers on bootstrap and keeps the metrics', async () => {
    const { service, registry } = setup({ echo });
    service.onApplicationBootstrap();
    await waitFor(() => states(service).echo === 'up');
    const metrics = await registry.getMetricsAsJSON();
    const value = (name: string) => metrics.find((m) => m.name === name)?.values[0]?.value;
    expect(value('mcp_server_up')).toBe(1);
    expect(value('mcp_server_tools')).toBe(3);
    expect(value('mcp_server_restarts_total')).toBe(0);
  });

  it('keeps the running servers on a bad file and reports why, then applies a good one', async () => {
    const { service, write } = setup({ echo });
    service.onApplicationBootstrap();
    await waitFor(() => states(service).echo === 'up');
    const pid = service.snapshot()[0]?.pid;

    write('{"mcpServers": {"other": {"command": ""}}}');
    await service.reload();
    expect(service.reloadProblems()).toEqual(['mcpServers.other.command must not be empty']);
    expect(states(service)).toEqual({ echo: 'up' });

    write({ mcpServers: { echo, other: { ...echo, args: [FIXTURE, '${ECHO_ARG}'] } } });
    await service.reload();
    expect(service.reloadProblems()).toEqual([]);
    await waitFor(() => states(service).other === 'up');
    expect(service.snapshot().find((s) => s.name === 'echo')?.pid).toBe(pid);

    write({ mcpServers: { other: { ...echo, args: [FIXTURE, '${ECHO_ARG}'] } } });
    await service.reload();
    expect(Object.keys(states(service))).toEqual(['other']);
  });

  it('starts a process per client of a per-client server, within maxInstances', async () => {
    const perClient = {
      ...echo,
      instances: 'per-client',
      maxInstances: 2,
      instanceIdleSeconds: 300,
    };
    const { service, registry, write } = setup({ echo: perClient });
    service.onApplicationBootstrap();
    await waitFor(() => states(service).echo === 'up');
    expect(service.childKey('echo', undefined)).toBe('echo');
    const alice = service.childKey('echo', 'alice');
    expect(alice).toBe('echo/alice');
    expect(service.session(alice)).toBeUndefined();

    await Promise.all([service.openChild('echo', 'alice'), service.openChild('echo', 'bob')]);
    const sessions = [service.session('echo'), service.session(alice), service.session('echo/bob')];
    expect(new Set(sessions).size).toBe(3);
    await expect(service.openChild('echo', 'carol')).rejects.toThrow(/already runs 2/);
    const metrics = await registry.getMetricsAsJSON();
    const value = (name: string) => metrics.find((m) => m.name === name)?.values[0];
    expect(value('mcp_server_instances')).toMatchObject({ value: 2, labels: { server: 'echo' } });
    expect(value('mcp_server_instances_refused_total')).toMatchObject({
      value: 1,
      labels: { server: 'echo', reason: 'max_instances' },
    });
    // The inventory shows the server once, whatever its clients.
    expect(service.servers().map((s) => s.name)).toEqual(['echo']);
    // Removed from the file: its processes stop and its series go.
    write({ mcpServers: {} });
    await service.reload();
    expect(service.session(alice)).toBeUndefined();
    const after = await registry.getMetricsAsJSON();
    expect(after.find((m) => m.name === 'mcp_server_instances')?.values).toEqual([]);
  });

  it('stops every server on shutdown', async () => {
    const { service } = setup({ echo });
    service.onApplicationBootstrap();
    await waitFor(() => states(service).echo === 'up');
    const pid = service.snapshot()[0]!.pid!;
    await service.onApplicationShutdown();
    expect(() => process.kill(pid, 0)).toThrow();
  });
});
