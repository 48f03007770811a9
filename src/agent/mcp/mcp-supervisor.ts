import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { Counter, Gauge } from 'prom-client';
import type { McpServerSpec } from '../../config/mcp-servers.schema.js';
import type { McpServerRunner, McpServerStatus, McpSession } from './mcp-server-runner.js';
import type { RunnerTimings } from './runner-timings.js';
import type { AgentServerView } from '../../agent-protocol/relay-protocol.js';
import { diffSpecs, type SpecDiff } from './spec-diff.js';

/** The supervised MCP servers, applied by difference; framework-free, the service wires it. */
export interface McpMetrics {
  up: Gauge<string>;
  restarts: Counter<string>;
  tools: Gauge<string>;
}

export interface McpSupervisorDeps {
  logger: Logger;
  metrics: McpMetrics;
  parentEnv: Readonly<Record<string, string | undefined>>;
  cwd: string;
  timings: RunnerTimings;
  clientInfo: { name: string; version: string };
}

/** One server as the relay's inventory shows it. */
export type McpServerView = AgentServerView;

/** What the relay needs from the supervisor. */
export type McpSessions = Pick<
  McpSupervisor,
  'servers' | 'session' | 'onChange' | 'onRelayMessage' | 'onSessionClosed'
>;

type Unsubscribe = () => void;

export class McpSupervisor {
  readonly #runners = new Map<string, McpServerRunner>();
  readonly #stopping = new Set<McpServerRunner>();
  #runnerClass: typeof McpServerRunner | undefined;
  readonly #changeListeners = new Set<() => void>();
  readonly #messageListeners = new Set<(server: string, message: JSONRPCMessage) => void>();
  readonly #closedListeners = new Set<(server: string) => void>();
  #queue: Promise<unknown> = Promise.resolve();
  #stopped = false;

  constructor(private readonly deps: McpSupervisorDeps) {}

  /** Starts added, stops removed and restarts changed servers; calls run one after another. */
  apply(specs: readonly McpServerSpec[]): Promise<SpecDiff> {
    const next = this.#queue.then(() => this.#apply(specs));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Stops every server (SIGTERM to each process group, SIGKILL after the grace period). */
  async stopAll(): Promise<void> {
    this.#stopped = true;
    await this.#queue;
    await Promise.all([...this.#runners.keys()].map((name) => this.#remove(name)));
  }

  /** Synchronous SIGKILL of every process group: the `process.on('exit')` safety net. */
  killAllNow(): void {
    this.#stopped = true;
    for (const runner of [...this.#runners.values(), ...this.#stopping]) runner.killNow();
  }

  snapshot(): McpServerStatus[] {
    return [...this.#runners.values()].map((runner) => runner.status());
  }

  servers(): McpServerView[] {
    return [...this.#runners.values()].map((runner) => ({
      name: runner.name,
      state: runner.state,
      tools: runner.tools,
    }));
  }

  /** The session of a server that is up; undefined for an unknown or stopped one. */
  session(name: string): McpSession | undefined {
    return this.#runners.get(name)?.session;
  }

  /** A server was added or removed, or its state or tools changed. */
  onChange(listener: () => void): Unsubscribe {
    return subscribe(this.#changeListeners, listener);
  }

  /** A relayed response or a notification from a server's child. */
  onRelayMessage(listener: (server: string, message: JSONRPCMessage) => void): Unsubscribe {
    return subscribe(this.#messageListeners, listener);
  }

  /** A server's session ended (exit, failed ping, stop, reload). */
  onSessionClosed(listener: (server: string) => void): Unsubscribe {
    return subscribe(this.#closedListeners, listener);
  }

  async #apply(specs: readonly McpServerSpec[]): Promise<SpecDiff> {
    const diff = diffSpecs(
      [...this.#runners.values()].map((runner) => runner.spec),
      specs,
    );
    if (this.#stopped) return diff;
    const starts = diff.added.length + diff.changed.length > 0;
    const Runner = starts ? await this.#loadRunner() : undefined;
    await Promise.all([
      ...diff.removed.map((name) => this.#remove(name)),
      ...(Runner ? diff.changed.map((spec) => this.#replace(Runner, spec)) : []),
    ]);
    if (Runner) for (const spec of diff.added) this.#add(Runner, spec);
    return diff;
  }

  /** Loads the MCP SDK now, so the first apply() adds its servers without waiting for it. */
  async preload(): Promise<void> {
    await this.#loadRunner();
  }

  /** The MCP SDK loads with the first server: a service without MCP servers never loads it. */
  async #loadRunner(): Promise<typeof McpServerRunner> {
    this.#runnerClass ??= (await import('./mcp-server-runner.js')).McpServerRunner;
    return this.#runnerClass;
  }

  #add(Runner: typeof McpServerRunner, spec: McpServerSpec): void {
    const { metrics } = this.deps;
    const labels = { server: spec.name };
    const runner = new Runner(spec, {
      cwd: this.deps.cwd,
      parentEnv: this.deps.parentEnv,
      logger: this.deps.logger,
      timings: this.deps.timings,
      clientInfo: this.deps.clientInfo,
      hooks: {
        changed: (changed) => {
          // A stopped runner's last "down" must not recreate the series of a removed server.
          if (this.#runners.get(spec.name) !== changed) return;
          metrics.up.set(labels, changed.state === 'up' ? 1 : 0);
          metrics.tools.set(labels, changed.tools.length);
          this.#emit(this.#changeListeners);
        },
        restarted: () => metrics.restarts.inc(labels),
        relayMessage: (server, message) => {
          for (const listener of this.#messageListeners) listener(server, message);
        },
        sessionClosed: (server) => {
          for (const listener of this.#closedListeners) listener(server);
        },
      },
    });
    this.#runners.set(spec.name, runner);
    // Present from the start, so a dashboard sees 0 rather than no series.
    metrics.restarts.inc(labels, 0);
    runner.start();
  }

  async #remove(name: string): Promise<void> {
    const runner = this.#runners.get(name);
    if (!runner) return;
    this.#runners.delete(name);
    const labels = { server: name };
    this.deps.metrics.up.remove(labels);
    this.deps.metrics.tools.remove(labels);
    this.deps.metrics.restarts.remove(labels);
    this.#emit(this.#changeListeners);
    await this.#stop(runner);
  }

  async #replace(Runner: typeof McpServerRunner, spec: McpServerSpec): Promise<void> {
    const old = this.#runners.get(spec.name);
    this.#runners.delete(spec.name);
    if (old) await this.#stop(old);
    this.#add(Runner, spec);
  }

  /** Out of the map at once, but still reachable by killAllNow until its group is gone. */
  async #stop(runner: McpServerRunner): Promise<void> {
    this.#stopping.add(runner);
    try {
      await runner.stop();
    } finally {
      this.#stopping.delete(runner);
    }
  }

  #emit(listeners: Set<() => void>): void {
    for (const listener of listeners) listener();
  }
}

function subscribe<T>(set: Set<T>, listener: T): Unsubscribe {
  set.add(listener);
  return () => set.delete(listener);
}
