import { existsSync } from 'node:fs';
import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnModuleInit,
  type OnApplicationShutdown,
  Optional,
} from '@nestjs/common';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { loadMcpServers } from '../../config/mcp-servers.loader.js';
import type { McpServerSpec } from '../../config/mcp-servers.schema.js';
import { flushLogSync } from '../../common/logging/logger.js';
import { LOGGER } from '../../common/logging/logger.token.js';
import type { AgentServerView } from '../../agent-protocol/relay-protocol.js';
import { ClientInstances, instanceKey, type InstanceRefusal } from './client-instances.js';
import { watchConfigDir } from './config-watcher.js';
import { installExitSafetyNet } from './exit-safety-net.js';
import { DEFAULT_RUNNER_TIMINGS, type RunnerTimings } from './runner-timings.js';
import type {
  McpServerRunner,
  McpServerStatus,
  McpSession,
  RunnerDeps,
  RunnerHooks,
} from './mcp-server-runner.js';
import { diffSpecs, type SpecDiff } from './spec-diff.js';

/** Optional override of the supervision timings (tests). */
export const MCP_RUNNER_TIMINGS = Symbol('MCP_RUNNER_TIMINGS');

const RELOAD_DEBOUNCE_MS = 500;

/** What the relay needs from the supervisor. */
export type McpSessions = Pick<
  McpSupervisorService,
  'servers' | 'session' | 'childKey' | 'openChild' | 'setListener'
>;

/** What the relay connection hears from the supervisor. */
export interface SessionListener {
  /** A server was added or removed, or its state or tools changed. */
  changed(): void;
  /** A relayed response or a notification from a server's child. */
  message(server: string, message: JSONRPCMessage): void;
  /** A server's session ended (exit, failed ping, stop, reload). */
  closed(server: string): void;
}

/** The MCP servers in the app's lifecycle; a reload of the file is applied by difference. */
@Injectable()
export class McpSupervisorService
  implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown
{
  readonly #runners = new Map<string, McpServerRunner>();
  readonly #stopping = new Set<McpServerRunner>();
  #runnerClass: typeof McpServerRunner | undefined;
  #listener: SessionListener | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #stopped = false;
  #stopWatching: (() => void) | undefined;
  readonly #logger: Logger;
  readonly #runnerDeps: Omit<RunnerDeps, 'hooks'>;
  #reloadProblems: string[] = [];
  #removeSafetyNet: (() => void) | undefined;
  readonly #instances: ClientInstances;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) baseLogger: Logger,
    @InjectMetric('mcp_server_up') private readonly up: Gauge<string>,
    @InjectMetric('mcp_server_restarts_total') private readonly restarts: Counter<string>,
    @InjectMetric('mcp_server_tools') private readonly tools: Gauge<string>,
    @InjectMetric('mcp_server_instances') private readonly instances: Gauge<string>,
    @InjectMetric('mcp_server_instances_refused_total') refused: Counter<string>,
    @Optional() @Inject(MCP_RUNNER_TIMINGS) timings?: RunnerTimings,
  ) {
    this.#logger = baseLogger.child({ context: 'McpSupervisor' });
    this.#runnerDeps = {
      // Children inherit a filtered copy of the agent's real environment, and a reloaded file
      // expands `${VAR}` from it as start-up did.
      parentEnv: config.mcp.parentEnv.reveal(),
      cwd: existsSync(config.mcp.reposDir) ? config.mcp.reposDir : process.cwd(),
      logger: baseLogger,
      timings: timings ?? DEFAULT_RUNNER_TIMINGS,
      clientInfo: { name: 'plant-store-agent', version: config.version },
    };
    this.#instances = new ClientInstances({
      create: (spec, onChange) => this.#newRunner(spec, { changed: onChange }),
      stop: (runner) => this.#stop(runner),
      counted: (server, count) => this.instances.set({ server }, count),
      refused: (server, reason: InstanceRefusal) => refused.inc({ server, reason }),
    });
  }

  /** With servers configured, the SDK is loaded before bootstrap, so `hello` lists them. */
  async onModuleInit(): Promise<void> {
    if (this.config.mcp.servers.length > 0) await this.#loadRunner();
  }

  onApplicationBootstrap(): void {
    // Before the first child starts: no catchable signal leaves a group or a log batch behind.
    this.#removeSafetyNet = installExitSafetyNet(() => {
      this.#killAllNow();
      flushLogSync(this.#logger);
    });
    if (this.config.mcp.absent) {
      this.#logger.info(`${this.config.mcp.file} does not exist: no MCP servers`);
    }
    const names = this.config.mcp.servers.map((spec) => spec.name);
    // None to start is start-up detail (debug), so the default output stays the banner.
    this.#logger[names.length > 0 ? 'info' : 'debug'](
      { servers: names },
      `starting ${names.length} MCP server(s)`,
    );
    void this.#applyInTurn(this.config.mcp.servers);
    const { configDir, absent, configDirExplicit } = this.config.mcp;
    this.#stopWatching = watchConfigDir(
      configDir,
      RELOAD_DEBOUNCE_MS,
      () => void this.reload(),
      (error) => {
        // The default folder may simply not exist (the quick start): nothing to watch then.
        const expected = absent && !configDirExplicit;
        this.#logger[expected ? 'debug' : 'warn'](
          `cannot watch ${configDir} for changes: ${error.message}`,
        );
      },
    );
  }

  /** Stops every server (SIGTERM to each process group, SIGKILL after the grace period). */
  async onApplicationShutdown(): Promise<void> {
    this.#stopWatching?.();
    this.#logger.info('stopping MCP servers');
    this.#stopped = true;
    await this.#queue;
    await Promise.all([...this.#runners.keys()].map((name) => this.#remove(name)));
    await this.#instances.stopAll();
    this.#removeSafetyNet?.();
  }

  /** For `/health` details. */
  snapshot(): McpServerStatus[] {
    return [...this.#runners.values()].map((runner) => runner.status());
  }

  /** The errors of the last rejected reload; empty when the running set matches the file. */
  reloadProblems(): string[] {
    return [...this.#reloadProblems];
  }

  /** One server each, as the relay's inventory shows it. */
  servers(): AgentServerView[] {
    return [...this.#runners.values()].map((runner) => ({
      name: runner.spec.name,
      state: runner.state,
      tools: runner.tools,
    }));
  }

  /** The session of a server (or a client's process: a child key) that is up. */
  session(key: string): McpSession | undefined {
    return this.#runners.get(key)?.session ?? this.#instances.session(key);
  }

  /** Whose child serves `client`'s requests to `server`: its own for a per-client server. */
  childKey(server: string, client: string | undefined): string {
    const spec = this.#runners.get(server)?.spec;
    return spec?.instances === 'per-client' && client !== undefined
      ? instanceKey(server, client)
      : server;
  }

  /** Starts `client`'s process of a per-client server if need be; throws when it cannot. */
  async openChild(server: string, client: string): Promise<void> {
    const spec = this.#runners.get(server)?.spec;
    if (!spec) throw new Error(`MCP server "${server}" is not available (unknown or not running)`);
    await this.#instances.open(spec, client);
  }

  /** The one relay connection that hears of changes and messages; undefined when it stops. */
  setListener(listener: SessionListener | undefined): void {
    this.#listener = listener;
  }

  /** Re-reads `mcp-servers.json`; a bad file keeps the running servers as they are. */
  async reload(): Promise<void> {
    const { configDir, configDirExplicit } = this.config.mcp;
    const environment = this.#runnerDeps.parentEnv;
    const load = loadMcpServers(configDir, { required: configDirExplicit, environment });
    this.#reloadProblems = load.problems;
    if (load.problems.length > 0) {
      this.#logger.error(
        { problems: load.problems },
        `${load.file} was not reloaded (the running MCP servers are kept): ${load.problems.join('; ')}`,
      );
      return;
    }
    const { added, removed, changed } = await this.#applyInTurn(load.specs);
    if (added.length + removed.length + changed.length === 0) return;
    const names = (specs: McpServerSpec[]) => specs.map((spec) => spec.name);
    this.#logger.info(
      { added: names(added), removed, changed: names(changed) },
      `${load.file} reloaded`,
    );
  }

  /** Synchronous SIGKILL of every process group: the `process.on('exit')` safety net. */
  #killAllNow(): void {
    this.#stopped = true;
    const runners = [...this.#runners.values(), ...this.#instances.runners(), ...this.#stopping];
    for (const runner of runners) runner.killNow();
  }

  /** Starts added, stops removed and restarts changed servers; calls run one after another. */
  #applyInTurn(specs: readonly McpServerSpec[]): Promise<SpecDiff> {
    const next = this.#queue.then(() => this.#apply(specs));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #apply(specs: readonly McpServerSpec[]): Promise<SpecDiff> {
    const running = [...this.#runners.values()].map((runner) => runner.spec);
    const diff = diffSpecs(running, specs);
    if (this.#stopped) return diff;
    if (diff.added.length + diff.changed.length > 0) await this.#loadRunner();
    await Promise.all([
      ...diff.removed.map((name) => this.#remove(name)),
      ...diff.changed.map((spec) => this.#replace(spec)),
    ]);
    for (const spec of diff.added) this.#add(spec);
    return diff;
  }

  /** The MCP SDK loads with the first server: a service without MCP servers never loads it. */
  async #loadRunner(): Promise<void> {
    this.#runnerClass ??= (await import('./mcp-server-runner.js')).McpServerRunner;
  }

  #add(spec: McpServerSpec): void {
    const labels = { server: spec.name };
    const runner = this.#newRunner(spec, {
      changed: (changed) => {
        // A stopped runner's last "down" must not recreate the series of a removed server.
        if (this.#runners.get(spec.name) !== changed) return;
        this.up.set(labels, changed.state === 'up' ? 1 : 0);
        this.tools.set(labels, changed.tools.length);
        this.#listener?.changed();
      },
      restarted: () => this.restarts.inc(labels),
    });
    // Present from the start, so a dashboard sees 0 rather than no series.
    this.restarts.inc(labels, 0);
    this.#runners.set(spec.name, runner);
    runner.start();
  }

  /** A runner whose relayed traffic goes to the listener. */
  #newRunner(
    spec: McpServerSpec,
    hooks: Pick<RunnerHooks, 'changed'> & Partial<RunnerHooks>,
  ): McpServerRunner {
    const Runner = this.#runnerClass;
    if (!Runner) throw new Error('the MCP SDK is not loaded');
    return new Runner(spec, {
      ...this.#runnerDeps,
      hooks: {
        relayMessage: (key, message) => {
          this.#instances.touch(key);
          this.#listener?.message(key, message);
        },
        sessionClosed: (key) => this.#listener?.closed(key),
        ...hooks,
      },
    });
  }

  async #remove(name: string): Promise<void> {
    const runner = this.#runners.get(name);
    if (!runner) return;
    this.#runners.delete(name);
    await this.#instances.stopAll(name);
    const labels = { server: name };
    const metrics = [this.up, this.tools, this.restarts, this.instances];
    for (const metric of metrics) metric.remove(labels);
    this.#listener?.changed();
    await this.#stop(runner);
  }

  async #replace(spec: McpServerSpec): Promise<void> {
    const old = this.#runners.get(spec.name);
    this.#runners.delete(spec.name);
    await this.#instances.stopAll(spec.name);
    if (old) await this.#stop(old);
    this.#add(spec);
  }

  /** Out of the map at once, but still reachable by the safety net until its group is gone. */
  async #stop(runner: McpServerRunner): Promise<void> {
    this.#stopping.add(runner);
    try {
      await runner.stop();
    } finally {
      this.#stopping.delete(runner);
    }
  }
}
