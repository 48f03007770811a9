import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import {
  type JSONRPCMessage,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import { groupRunning, signalGroup } from './process-group.js';
import { type StdoutLimits, StdoutReader, type StdoutReaderSink } from './stdout-reader.js';

/**
 * An MCP stdio transport whose child runs in its own process group, and whose every stop
 * signals the whole group: the SDK's StdioClientTransport signals the direct child only, so
 * the real server behind `npx` or `sh -c` outlives it. `onclose` fires when the direct child
 * exits, not when its pipes close (a grandchild may hold them), and the group is then swept.
 */
export interface ProcessGroupTransportOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Every stderr chunk; the pipe is always drained whether or not anyone listens. */
  onStderr?: (chunk: Buffer) => void;
  /** Between SIGTERM and SIGKILL. */
  killGraceMs: number;
  stdout?: Partial<StdoutLimits>;
  /** What was dropped from stdout; after a flood, stdout is paused for good. */
  stdoutEvents?: Omit<StdoutReaderSink, 'message'>;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process never started (ENOENT, EACCES). */
  spawnError?: Error;
}

/**
 * Resolves once the pipe has taken `line`. The write's callback is made where neither the
 * message nor its text is in scope: it lives until the child reads the line, and a closure
 * over either would keep a second copy of everything queued for a child that reads slowly.
 */
function writeLine(stdin: Writable, line: string): Promise<void> {
  let done!: (error: Error | null | undefined) => void;
  const written = new Promise<void>((resolve, reject) => {
    done = (error) => (error ? reject(error) : resolve());
  });
  stdin.write(line, done);
  return written;
}

export function describeExit(exit: ChildExit): string {
  if (exit.spawnError) return `could not be started: ${exit.spawnError.message}`;
  return `exited with ${exit.signal ? `signal ${exit.signal}` : `code ${String(exit.code)}`}`;
}

const GROUP_POLL_MS = 50;

export class ProcessGroupTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  #child: ChildProcessWithoutNullStreams | undefined;
  readonly #stdout: StdoutReader;
  #exit: ChildExit | undefined;
  #closed = false;
  #sweep: Promise<void> | undefined;
  #sweepDone = false;
  #resolveExited!: (exit: ChildExit) => void;
  /** Resolves once the direct child has exited (or failed to spawn). */
  readonly exited = new Promise<ChildExit>((resolve) => (this.#resolveExited = resolve));

  constructor(private readonly options: ProcessGroupTransportOptions) {
    // Before the SDK Client and the relay: what nobody waits for costs no more than this.
    this.#stdout = new StdoutReader(
      {
        message: (message) => {
          // This runs in the stdout 'data' handler: a throw here would be uncaught and end
          // the whole process, plant API included.
          try {
            this.onmessage?.(message);
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)));
          }
        },
        garbage: (line) => this.options.stdoutEvents?.garbage(line),
        unknownAnswer: (id) => this.options.stdoutEvents?.unknownAnswer(id),
        flood: (budget, reason) => {
          this.#child?.stdout.pause();
          this.options.stdoutEvents?.flood(budget, reason);
        },
      },
      options.stdout,
    );
  }

  get pid(): number | undefined {
    return this.#exit ? undefined : this.#child?.pid;
  }

  get exitInfo(): ChildExit | undefined {
    return this.#exit;
  }

  start(): Promise<void> {
    if (this.#child) throw new Error('ProcessGroupTransport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, this.options.args, {
        env: this.options.env,
        cwd: this.options.cwd,
        // Its own process group (pgid = pid), so `kill(-pid)` reaches every descendant.
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
      });
      this.#child = child;
      let spawned = false;

      // Without an 'error' listener a spawn ENOENT would crash the whole agent
      // (supercorp-ai/supergateway#177).
      child.on('error', (error) => {
        if (!spawned) {
          this.#onExit({ code: null, signal: null, spawnError: error });
          reject(error);
        } else {
          this.onerror?.(error);
        }
      });
      child.on('spawn', () => {
        spawned = true;
        resolve();
      });
      child.on('exit', (code, signal) => this.#onExit({ code, signal }));

      for (const pipe of [child.stdin, child.stdout, child.stderr]) {
        pipe.on('error', (error) => this.onerror?.(error));
      }
      // A flood pauses stdout: no 'data' events after it.
      child.stdout.on('data', (chunk: Buffer) => this.#stdout.write(chunk));
      child.stderr.on('data', (chunk: Buffer) => this.options.onStderr?.(chunk));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#exit || this.#closed || !stdin.writable) {
      return Promise.reject(new Error('MCP server process is not running'));
    }
    this.#stdout.sent(message);
    return writeLine(stdin, serializeMessage(message));
  }

  /** Stops the whole process group: SIGTERM, then SIGKILL after the grace period. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#child?.stdin.end();
      if (this.#child && !this.#exit) this.onclose?.();
    }
    await this.#sweepGroup();
    if (this.#child?.pid !== undefined) await this.exited;
  }

  /** SIGKILL the group synchronously when the agent exits without its shutdown hooks. */
  killNow(): void {
    const pgid = this.#child?.pid;
    if (pgid !== undefined && !this.#sweepDone) signalGroup(pgid, 'SIGKILL');
  }

  /** Written to stdin and not taken by the pipe yet: a child that does not read shows here. */
  get stdinWaitingBytes(): number {
    return this.#child?.stdin.writableLength ?? 0;
  }

  #onExit(exit: ChildExit): void {
    if (this.#exit) return;
    this.#exit = exit;
    this.#resolveExited(exit);
    this.#stdout.clear();
    // Grandchildren of a crashed server are still in its group: sweep them too.
    void this.#sweepGroup();
    if (!this.#closed) {
      this.#closed = true;
      this.onclose?.();
    }
  }

  #sweepGroup(): Promise<void> {
    this.#sweep ??= this.#doSweep().finally(() => (this.#sweepDone = true));
    return this.#sweep;
  }

  async #doSweep(): Promise<void> {
    const pgid = this.#child?.pid;
    if (pgid === undefined) return;
    if (!signalGroup(pgid, 'SIGTERM')) return;
    const deadline = Date.now() + this.options.killGraceMs;
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
      if (!groupRunning(pgid)) return;
    }
    signalGroup(pgid, 'SIGKILL');
    await this.exited;
  }
}
