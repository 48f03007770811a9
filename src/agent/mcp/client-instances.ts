import type { McpServerSpec } from '../../config/mcp-servers.schema.js';
import type { McpServerRunner, McpSession } from './mcp-server-runner.js';

/** Why a client got no process of its own (a metric label). */
export type InstanceRefusal = 'max_instances' | 'start_failed';

export interface ClientInstancesDeps {
  /** A runner for `spec` (named by its instance key) that reports its state changes. */
  create(spec: McpServerSpec, onChange: (runner: McpServerRunner) => void): McpServerRunner;
  stop(runner: McpServerRunner): Promise<void>;
  /** How many processes `server` runs for its clients now (a metric). */
  counted(server: string, instances: number): void;
  refused(server: string, reason: InstanceRefusal): void;
}

interface Instance {
  runner: McpServerRunner;
  lastUsed: number;
  idleMs: number;
  /** Settles when the process is up, or rejects when its first start fails. */
  ready: Promise<void>;
}

const SWEEP_MS = 5_000;

/** `tools` for client `alice` runs as `tools/alice`: `/` never occurs in a server name. */
export function instanceKey(server: string, client: string): string {
  return `${server}/${client}`;
}

/** The server name of a child's key: the name itself, or the part before its client. */
export function serverOfKey(key: string): string {
  const slash = key.indexOf('/');
  return slash === -1 ? key : key.slice(0, slash);
}

/**
 * The processes of `"instances": "per-client"` servers, one per calling client, at most
 * `maxInstances` (a further client is refused, never given another's), stopped when idle.
 */
export class ClientInstances {
  readonly #instances = new Map<string, Instance>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly deps: ClientInstancesDeps) {}

  /** Starts `client`'s process of `spec` if need be; throws why it cannot. */
  async open(spec: McpServerSpec, client: string): Promise<void> {
    const key = instanceKey(spec.name, client);
    const instance = this.#instances.get(key) ?? this.#start(spec, key);
    instance.lastUsed = Date.now();
    await instance.ready;
  }

  session(key: string): McpSession | undefined {
    return this.#instances.get(key)?.runner.session;
  }

  /** The child of `key` said something: it is in use. */
  touch(key: string): void {
    const instance = this.#instances.get(key);
    if (instance) instance.lastUsed = Date.now();
  }

  runners(): McpServerRunner[] {
    return [...this.#instances.values()].map((instance) => instance.runner);
  }

  /** Stops every process of `server` (removed or changed), or of every server. */
  async stopAll(server?: string): Promise<void> {
    const keys = [...this.#instances.keys()].filter(
      (key) => server === undefined || serverOfKey(key) === server,
    );
    await Promise.all(keys.map((key) => this.#stop(key)));
  }

  #start(spec: McpServerSpec, key: string): Instance {
    if (this.#count(spec.name) >= spec.maxInstances) {
      this.deps.refused(spec.name, 'max_instances');
      const message = `MCP server "${spec.name}" runs one process per client and already runs ${spec.maxInstances} (its maxInstances)`;
      throw new Error(message);
    }
    let settle: { resolve: () => void; reject: (error: Error) => void } | undefined;
    const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    const runner = this.deps.create({ ...spec, name: key }, (changed) => {
      if (changed.state === 'up') settle?.resolve();
      else if (changed.state !== 'starting') settle?.reject(this.#startFailed(spec.name, key));
      else return;
      settle = undefined;
    });
    // Awaited by the request that started it; this only keeps a failed start from going unhandled.
    ready.catch(() => undefined);
    const idleMs = spec.instanceIdleSeconds * 1000;
    const instance = { runner, lastUsed: Date.now(), idleMs, ready };
    this.#instances.set(key, instance);
    runner.start();
    this.deps.counted(spec.name, this.#count(spec.name));
    this.#sweeper ??= setInterval(() => this.#sweep(), SWEEP_MS).unref();
    return instance;
  }

  #startFailed(server: string, key: string): Error {
    this.deps.refused(server, 'start_failed');
    void this.#stop(key);
    return new Error(`MCP server "${server}" could not start a process for this client`);
  }

  #sweep(): void {
    const now = Date.now();
    for (const [key, instance] of this.#instances) {
      if (now - instance.lastUsed > instance.idleMs) void this.#stop(key);
    }
  }

  async #stop(key: string): Promise<void> {
    const instance = this.#instances.get(key);
    if (!instance) return;
    this.#instances.delete(key);
    this.deps.counted(serverOfKey(key), this.#count(serverOfKey(key)));
    if (this.#instances.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
    await this.deps.stop(instance.runner);
  }

  #count(server: string): number {
    return [...this.#instances.keys()].filter((key) => serverOfKey(key) === server).length;
  }
}
