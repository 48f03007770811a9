import { existsSync } from 'node:fs';
import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnModuleInit,
  type OnApplicationShutdown,
  Optional,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { loadMcpServers } from '../../config/mcp-servers.loader.js';
import { LOGGER } from '../../common/logging/logger.token.js';
import { ConfigWatcher } from './config-watcher.js';
import { installExitSafetyNet } from './exit-safety-net.js';
import { DEFAULT_RUNNER_TIMINGS, type RunnerTimings } from './runner-timings.js';
import type { McpServerStatus } from './mcp-server-runner.js';
import { McpSupervisor } from './mcp-supervisor.js';

/** Optional override of the supervision timings (tests); the defaults are the issue's. */
export const MCP_RUNNER_TIMINGS = Symbol('MCP_RUNNER_TIMINGS');

const RELOAD_DEBOUNCE_MS = 500;

/** The MCP servers in the app's lifecycle: started after bootstrap, reloaded, stopped whole. */
@Injectable()
export class McpSupervisorService
  implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown
{
  readonly supervisor: McpSupervisor;
  readonly #watcher: ConfigWatcher;
  readonly #logger: Logger;
  readonly #parentEnv: Readonly<Record<string, string | undefined>>;
  #reloadProblems: string[] = [];
  #removeSafetyNet: (() => void) | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) logger: Logger,
    @InjectMetric('mcp_server_up') up: Gauge<string>,
    @InjectMetric('mcp_server_restarts_total') restarts: Counter<string>,
    @InjectMetric('mcp_server_tools') tools: Gauge<string>,
    @Optional() @Inject(MCP_RUNNER_TIMINGS) timings?: RunnerTimings,
  ) {
    this.#logger = logger.child({ context: 'McpSupervisor' });
    // Children inherit a filtered copy of the agent's real environment, and a reloaded file
    // expands `${VAR}` from it as start-up did.
    this.#parentEnv = config.mcp.parentEnv.reveal();
    this.supervisor = new McpSupervisor({
      logger,
      metrics: { up, restarts, tools },
      parentEnv: this.#parentEnv,
      cwd: existsSync(config.mcp.reposDir) ? config.mcp.reposDir : process.cwd(),
      timings: timings ?? DEFAULT_RUNNER_TIMINGS,
      clientInfo: { name: 'plant-store-agent', version: config.version },
    });
    this.#watcher = new ConfigWatcher({
      dir: config.mcp.configDir,
      debounceMs: RELOAD_DEBOUNCE_MS,
      onChange: () => void this.reload(),
      onError: (error) => {
        // The default folder may simply not exist (the quick start): nothing to watch then.
        const expected = config.mcp.absent && !config.mcp.configDirExplicit;
        this.#logger[expected ? 'debug' : 'warn'](
          `cannot watch ${config.mcp.configDir} for changes: ${error.message}`,
        );
      },
    });
  }

  /** With servers configured, the SDK is loaded before bootstrap, so `hello` lists them. */
  async onModuleInit(): Promise<void> {
    if (this.config.mcp.servers.length > 0) await this.supervisor.preload();
  }

  onApplicationBootstrap(): void {
    // Before the first child starts: no signal Node can catch leaves a process group behind.
    this.#removeSafetyNet = installExitSafetyNet(() => this.supervisor.killAllNow());
    if (this.config.mcp.absent) {
      this.#logger.info(`${this.config.mcp.file} does not exist: no MCP servers`);
    }
    const names = this.config.mcp.servers.map((spec) => spec.name);
    // None to start is start-up detail (debug), so the default output stays the banner.
    this.#logger[names.length > 0 ? 'info' : 'debug'](
      { servers: names },
      `starting ${names.length} MCP server(s)`,
    );
    void this.supervisor.apply(this.config.mcp.servers);
    this.#watcher.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.#watcher.stop();
    this.#logger.info('stopping MCP servers');
    await this.supervisor.stopAll();
    this.#removeSafetyNet?.();
  }

  /** For `/health` details. */
  snapshot(): McpServerStatus[] {
    return this.supervisor.snapshot();
  }

  /** The errors of the last rejected reload; empty when the running set matches the file. */
  reloadProblems(): string[] {
    return [...this.#reloadProblems];
  }

  /** Re-reads `mcp-servers.json`; a bad file keeps the running servers as they are. */
  async reload(): Promise<void> {
    const { configDir, configDirExplicit } = this.config.mcp;
    const load = loadMcpServers(configDir, {
      required: configDirExplicit,
      environment: this.#parentEnv,
    });
    if (load.problems.length > 0) {
      this.#reloadProblems = load.problems;
      this.#logger.error(
        { problems: load.problems },
        `${load.file} was not reloaded (the running MCP servers are kept): ${load.problems.join('; ')}`,
      );
      return;
    }
    this.#reloadProblems = [];
    const diff = await this.supervisor.apply(load.specs);
    const names = {
      added: diff.added.map((spec) => spec.name),
      removed: diff.removed,
      changed: diff.changed.map((spec) => spec.name),
    };
    if (names.added.length + names.removed.length + names.changed.length > 0) {
      this.#logger.info(names, `${load.file} reloaded`);
    }
  }
}
