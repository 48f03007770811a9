import {
  Client,
  type JSONRPCMessage,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  type Tool,
} from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { McpServerSpec } from '../../config/mcp-servers.schema.js';
import { Backoff } from '../../common/retry/backoff.js';
import { buildChildEnv } from './child-env.js';
import type { McpToolInfo } from '../../agent-protocol/relay-protocol.js';
import { describeExit, ProcessGroupTransport } from './process-group-transport.js';
import { RelayTapTransport } from './relay-tap-transport.js';
import type { RunnerTimings } from './runner-timings.js';
import { StderrLog } from './stderr-log.js';
import type { StdoutReaderSink } from './stdout-reader.js';
import { errorMessage } from '../../common/errors/error-message.js';
import { truncateForLog } from '../../common/logging/truncate-for-log.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';

export type McpServerState = 'starting' | 'up' | 'down' | 'crash-looping';
export type McpServerStatus = ReturnType<McpServerRunner['status']>;

/** The relay's handle on a running server's MCP session. */
export interface McpSession {
  /** The child's answer to the agent's `initialize`, replayed to the agent's server. */
  readonly initializeResult: Record<string, unknown>;
  send(message: JSONRPCMessage): Promise<void>;
  /** Bytes handed to the child's stdin that its pipe has not taken yet (the child is behind). */
  waitingBytes(): number;
}

export interface RunnerHooks {
  /** State, pid or tools changed. */
  changed(runner: McpServerRunner): void;
  restarted?(runner: McpServerRunner): void;
  /** A relayed response or a notification from the child. */
  relayMessage(server: string, message: JSONRPCMessage): void;
  /** The session the relay used is gone; its pending requests must fail now. */
  sessionClosed(server: string): void;
}

export interface RunnerDeps {
  cwd: string;
  parentEnv: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  hooks: RunnerHooks;
  timings: RunnerTimings;
  clientInfo: { name: string; version: string };
}

interface Attempt {
  transport: ProcessGroupTransport;
  tap: RelayTapTransport;
  client: Client;
  timers: NodeJS.Timeout[];
}

export class McpServerRunner {
  #state: McpServerState = 'down';
  #restarts = 0;
  #tools: McpToolInfo[] = [];
  #resources = 0;
  #prompts = 0;
  /** Shown on /health: never text that came from the child (see describeForHealth). */
  #lastError: string | null = null;
  #attempt: Attempt | undefined;
  /** A failed attempt still being torn down, so stop() and killNow() can reach it. */
  #closing: { attempt: Attempt; done: Promise<void> } | undefined;
  #session: McpSession | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #backoff: Backoff;
  readonly #stderr: StderrLog;
  readonly #logger: Logger;
  readonly #stdoutLog: RateLimitedLog;
  /** Over every attempt: stdout lines that were not JSON-RPC, answers to ids nobody asked. */
  readonly #stdoutGarbage = { lines: 0, restarts: 0 };
  readonly #unsolicited = { unknownAnswers: 0, restarts: 0 };

  constructor(
    readonly spec: McpServerSpec,
    private readonly deps: RunnerDeps,
  ) {
    this.#backoff = new Backoff(deps.timings.backoff);
    this.#logger = deps.logger.child({ mcpServer: spec.name });
    this.#stderr = new StderrLog(this.#logger, deps.timings.stderr);
    this.#stdoutLog = new RateLimitedLog(this.#logger);
  }

  get state(): McpServerState {
    return this.#state;
  }

  get tools(): readonly McpToolInfo[] {
    return this.#tools;
  }

  /** The live session, only while the server is up. */
  get session(): McpSession | undefined {
    return this.#state === 'up' ? this.#session : undefined;
  }

  /** For /health, which is unauthenticated: never the stderr, which may print secrets. */
  status() {
    return {
      name: this.spec.name,
      state: this.#state,
      pid: this.#attempt?.transport.pid ?? null,
      restarts: this.#restarts,
      tools: this.#tools.length,
      resources: this.#resources,
      prompts: this.#prompts,
      lastError: this.#lastError,
      stdoutGarbage: { ...this.#stdoutGarbage },
      unsolicited: { ...this.#unsolicited },
    };
  }

  /** Starts the lifecycle in the background; never throws, never blocks on the child. */
  start(): void {
    void this.#run();
  }

  /** Stops for good: the whole process group gets SIGTERM, then SIGKILL after the grace. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#restartTimer);
    const attempt = this.#attempt;
    // A failed attempt may still be tearing down (up to the kill grace): wait for it too.
    await Promise.all([attempt && this.#teardown(attempt), this.#closing?.done]);
    this.#stderr.end();
    this.#setState('down');
  }

  /** Synchronous SIGKILL of the process group, for process exit without shutdown hooks. */
  killNow(): void {
    this.#stopped = true;
    clearTimeout(this.#restartTimer);
    this.#attempt?.transport.killNow();
    this.#closing?.attempt.transport.killNow();
  }

  /** One start attempt: spawn the child, initialize it, list what it offers, then serve. */
  async #run(): Promise<void> {
    if (this.#stopped) return;
    this.#tools = [];
    // A crash-looping server stays visibly so while it retries.
    const crashLooping = this.#backoff.attempts >= this.deps.timings.crashLoopAfter;
    this.#setState(crashLooping ? 'crash-looping' : 'starting');
    const attempt = this.#newAttempt();
    const initializeResult = await this.#initialize(attempt);
    if (!initializeResult || this.#stopped || this.#attempt !== attempt) return;
    this.#goUp(attempt, initializeResult);
  }

  /** The child's transport and MCP client, made the current attempt (not spawned yet). */
  #newAttempt(): Attempt {
    const { timings } = this.deps;
    const transport = new ProcessGroupTransport({
      command: this.spec.command,
      args: this.spec.args,
      env: buildChildEnv(this.deps.parentEnv, this.spec.env),
      cwd: this.deps.cwd,
      killGraceMs: timings.killGraceMs,
      onStderr: (chunk) => this.#stderr.write(chunk),
      stdout: timings.stdout,
      stdoutEvents: this.#stdoutEvents(() => attempt),
    });
    const tap = new RelayTapTransport(transport);
    const client = new Client(this.deps.clientInfo, {
      // Declared for the relay's clients: the child's requests for them are passed on to the
      // client it serves (RelayTapTransport), which gets an error when it lacks the capability.
      capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: {} },
      listChanged: {
        tools: { onChanged: (error, tools) => this.#toolsChanged(attempt, error, tools) },
      },
    });
    client.onerror = (error) => this.#logger.debug({ err: error }, 'MCP client error');
    tap.relayListener = (message) => this.deps.hooks.relayMessage(this.spec.name, message);
    const attempt: Attempt = { transport, tap, client, timers: [] };
    this.#attempt = attempt;
    return attempt;
  }

  /** Stray stdout lines and unasked answers are counted; a flood of either restarts the child. */
  #stdoutEvents(ownAttempt: () => Attempt): Omit<StdoutReaderSink, 'message'> {
    return {
      garbage: (line) => {
        this.#stdoutGarbage.lines++;
        this.#stdoutLog.warn(
          { stream: 'stdout', bytes: line.bytes, sample: line.sample },
          `dropped a line the MCP server wrote to stdout: ${line.reason}`,
        );
      },
      unknownAnswer: (id) => {
        this.#unsolicited.unknownAnswers++;
        this.#stdoutLog.warn(
          { stream: 'stdout', id: truncateForLog(id, 64) },
          'dropped an answer of the MCP server to a request id nobody waits for',
        );
      },
      flood: (budget, reason) => {
        if (this.#stopped || this.#attempt !== ownAttempt()) return;
        (budget === 'garbage' ? this.#stdoutGarbage : this.#unsolicited).restarts++;
        this.#logger.warn(`MCP server ${reason}; restarting it`);
        void this.#failed(ownAttempt(), reason);
      },
    };
  }

  /** `initialize`, then the lists; the initialize result, or undefined if the start failed. */
  async #initialize(attempt: Attempt): Promise<Record<string, unknown> | undefined> {
    const { transport, tap, client } = attempt;
    const timeout = this.deps.timings.initializeTimeoutMs;
    let stage = 'initialize';
    try {
      // The child's exit closes the transport, and the SDK then fails every pending request:
      // a child that exits during initialize fails the start at once, not after the timeout.
      await client.connect(tap, { timeout });
      const capabilities = client.getServerCapabilities() ?? {};
      const listOptions = { timeout, cacheMode: 'refresh' as const };
      if (capabilities.tools) {
        stage = 'tools/list';
        const { tools } = await client.listTools(undefined, listOptions);
        this.#tools = tools.map(toToolInfo);
      }
      this.#resources = await this.#count(attempt, 'resources', capabilities.resources, () =>
        client.listResources(undefined, listOptions).then((page) => page.resources),
      );
      this.#prompts = await this.#count(attempt, 'prompts', capabilities.prompts, () =>
        client.listPrompts(undefined, listOptions).then((page) => page.prompts),
      );
      stage = 'initialize';
      if (!tap.initializeResult) throw new Error('no initialize result seen');
      return tap.initializeResult;
    } catch (error) {
      if (this.#stopped || this.#attempt !== attempt) return undefined;
      const exit = transport.exitInfo;
      const reason = !exit
        ? errorMessage(error)
        : `${describeExit(exit)}${exit.spawnError ? '' : ' during start'}`;
      this.#logger.warn(
        { lastStderr: this.#stderr.recent().slice(-5) },
        `MCP server failed to start: ${reason}`,
      );
      const healthReason = exit ? reason : `${stage} failed: ${describeForHealth(error)}`;
      await this.#failed(attempt, reason, healthReason);
      return undefined;
    }
  }

  /** Opens the relay's session, keeps the child pinged, and watches for its exit. */
  #goUp(attempt: Attempt, initializeResult: Record<string, unknown>): void {
    const { transport } = attempt;
    const { timings } = this.deps;
    this.#session = {
      initializeResult,
      // Past the tap: a relayed message is none of the SDK Client's business.
      send: (message) => transport.send(message),
      waitingBytes: () => transport.stdinWaitingBytes,
    };
    this.#lastError = null;
    this.#setState('up');
    // `pid` is the agent's own (every line's base): the child's gets its own key, not a second `pid`.
    this.#logger.info({ serverPid: transport.pid, tools: this.#tools.length }, 'MCP server up');

    attempt.timers.push(
      setInterval(() => void this.#ping(attempt), timings.pingIntervalMs),
      setTimeout(() => this.#backoff.reset(), timings.stableUpMs),
    );
    void transport.exited.then((exit) => {
      if (this.#stopped || this.#attempt !== attempt) return;
      const reason = describeExit(exit);
      this.#logger.warn({ lastStderr: this.#stderr.recent().slice(-5) }, `MCP server ${reason}`);
      return this.#failed(attempt, reason);
    });
  }

  async #ping(attempt: Attempt): Promise<void> {
    try {
      await attempt.client.ping({ timeout: this.deps.timings.pingTimeoutMs });
    } catch (error) {
      if (this.#stopped || this.#attempt !== attempt || attempt.transport.exitInfo) return;
      const reason = `ping failed: ${errorMessage(error)}`;
      this.#logger.warn(`MCP server ${reason}; restarting it`);
      await this.#failed(attempt, reason, `ping failed: ${describeForHealth(error)}`);
    }
  }

  /** Tears down and retries; `reason` may quote the child (logs), `healthReason` never does. */
  async #failed(attempt: Attempt, reason: string, healthReason = reason): Promise<void> {
    this.#lastError = healthReason;
    // Gone from the outside before the (up to killGraceMs) teardown: a dead child is never up.
    this.#attempt = undefined;
    const crashLooping = this.#backoff.attempts + 1 >= this.deps.timings.crashLoopAfter;
    const delay = crashLooping ? this.#backoff.max() : this.#backoff.next();
    this.#setState(crashLooping ? 'crash-looping' : 'down');
    if (crashLooping) {
      this.#logger.error(
        { failures: this.#backoff.attempts, lastStderr: this.#stderr.recent(), retryInMs: delay },
        `MCP server is crash-looping: ${reason}`,
      );
    }
    const done = this.#teardown(attempt);
    this.#closing = { attempt, done };
    await done;
    if (this.#closing.attempt === attempt) this.#closing = undefined;
    if (this.#stopped) return;
    this.#restartTimer = setTimeout(() => {
      this.#restarts++;
      this.deps.hooks.restarted?.(this);
      void this.#run();
    }, delay);
  }

  async #teardown(attempt: Attempt): Promise<void> {
    for (const timer of attempt.timers) clearTimeout(timer);
    if (this.#session) {
      this.#session = undefined;
      this.deps.hooks.sessionClosed(this.spec.name);
    }
    // Client.close() closes the transport, which sweeps the process group.
    await attempt.client.close().catch(() => undefined);
    await attempt.transport.close();
  }

  /** What the child offers of `what`, when it offers any. */
  async #count(
    { transport }: Attempt,
    what: string,
    offered: unknown,
    list: () => Promise<unknown[]>,
  ): Promise<number> {
    if (!offered) return 0;
    try {
      return (await list()).length;
    } catch (error) {
      if (transport.exitInfo) throw error;
      // Tools are what the relay needs; a broken resources/prompts listing is not fatal.
      this.#logger.warn(`listing ${what} failed: ${errorMessage(error)}`);
      return 0;
    }
  }

  #toolsChanged(attempt: Attempt, error: Error | null, tools: Tool[] | null): void {
    if (this.#attempt !== attempt || this.#state !== 'up') return;
    if (error || !tools) {
      this.#logger.warn(`refreshing tools failed: ${error?.message ?? 'no list'}`);
      return;
    }
    this.#tools = tools.map(toToolInfo);
    this.deps.hooks.changed(this);
  }

  #setState(state: McpServerState): void {
    this.#state = state;
    this.deps.hooks.changed(this);
  }
}

function toToolInfo({ name, description, inputSchema }: Tool): McpToolInfo {
  return { name, description, inputSchema };
}

/**
 * A failure in our own fixed words: /health is unauthenticated, and a child's error text may
 * hold its `${VAR}`-expanded secret. The child's text stays in the logs.
 */
function describeForHealth(error: unknown): string {
  if (ProtocolError.isInstance(error)) return 'the server answered an error (see the logs)';
  if (SdkError.isInstance(error)) {
    if (error.code === SdkErrorCode.RequestTimeout) return 'the request timed out';
    if (error.code === SdkErrorCode.ConnectionClosed) return 'the connection closed';
    return "the server's answer was not accepted (see the logs)";
  }
  return 'see the logs';
}
