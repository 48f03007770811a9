import { type ChildProcess, spawn } from 'node:child_process';

/**
 * One spawned service (the plant store or the relay server) started on port 0 for each of its
 * three listeners: the kernel picks free ports at bind time, and the service's start-up log line
 * says which (`"ports":{"api":…,"health":…,"metrics":…}`). Nothing is picked ahead of the bind,
 * so no port can be taken in between and no start has to be retried.
 */
export interface BoundPorts {
  api: number;
  health: number;
  metrics: number;
}

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /**
   * Resolves with the exit code (or the signal name) once the process has exited and its
   * output is read to its end.
   */
  exited: Promise<number | string>;
  /** The ports of the start-up line; undefined when the process exits without one. */
  listening: Promise<BoundPorts | undefined>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface SpawnOptions {
  /** node's arguments (the entry point first), or the command's when `command` is set. */
  args: string[];
  env: Record<string, string | undefined>;
  /** `msg` of the start-up line that carries `ports`. */
  startLine: string;
  /** Default: this Node binary. */
  command?: string;
  cwd?: string;
}

/** The environment with `overrides` applied; an undefined value removes the variable. */
export function withOverrides(
  base: Record<string, string>,
  overrides: Record<string, string | undefined> = {},
): Record<string, string> {
  const env = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

function portsOf(line: string, startLine: string): BoundPorts | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const entry = JSON.parse(line) as { msg?: unknown; ports?: Partial<BoundPorts> };
    const ports = entry.ports;
    if (entry.msg !== startLine || ports === undefined) return undefined;
    // The webhook worker binds no API port: its line has none (then 0 here).
    const { api = 0, health, metrics } = ports;
    const bound = (port: unknown) => typeof port === 'number' && port > 0;
    if ((api === 0 || bound(api)) && bound(health) && bound(metrics)) {
      return { api, health: health!, metrics: metrics! };
    }
  } catch {
    // not a log line of ours
  }
  return undefined;
}

/**
 * A start is CPU-bound (about 2 s of CPU to load and boot): tests that run side by side in one
 * worker start at most this many services at a time, so a start's bound measures the service,
 * not a queue of other starts. Running services are not limited.
 */
const STARTS_AT_ONCE = 2;
let starting = 0;
const queue: (() => void)[] = [];

async function startSlot(): Promise<() => void> {
  if (starting >= STARTS_AT_ONCE) await new Promise<void>((resolve) => queue.push(resolve));
  else starting++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const next = queue.shift();
    if (next) next();
    else starting--;
  };
}

/** How long stop() waits for the exit after its signal (the service's own grace is 10 s). */
const STOP_BOUND_MS = 25_000;

/** Spawns the service once a start slot is free; the slot is freed at its start-up line or exit. */
export async function spawnService(options: SpawnOptions): Promise<ServiceProcess> {
  const release = await startSlot();
  const child = spawn(options.command ?? process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let pending = '';
  let found: ((ports: BoundPorts | undefined) => void) | undefined;
  const listening = new Promise<BoundPorts | undefined>((resolve) => (found = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    const lines = (pending + text).split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      const ports = portsOf(line, options.startLine);
      if (ports) found?.(ports);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close', not 'exit': the pipes are read to their end, so output() has the last lines.
  const exited = new Promise<number | string>((resolveExit) =>
    child.on('close', (code, signal) => resolveExit(code ?? signal ?? -1)),
  );
  // A start-up failure (spawn error, bad config): no ports will come.
  child.on('error', () => found?.(undefined));
  void exited.then(() => found?.(undefined));
  void listening.then(release);
  return {
    child,
    output: () => output,
    exited,
    listening,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      // A shutdown that hangs names itself with the process's last lines, not a test timeout.
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          const tail = output.split('\n').slice(-40).join('\n');
          reject(
            new Error(
              `no exit within ${STOP_BOUND_MS / 1000} s of ${signal}; last output:\n${tail}`,
            ),
          );
        }, STOP_BOUND_MS);
      });
      try {
        return await Promise.race([exited, hung]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export type StartOutcome = { healthy: BoundPorts } | { exited: number | string } | 'still starting';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits for the start-up line, then for GET /health on the health port to answer 200, until
 * `boundMs`: resolves with the ports, the exit code if the process exits first, or
 * 'still starting'. Every wait is on an event (the line, the exit) or a short health poll.
 */
export async function startOutcomeOf(
  service: ServiceProcess,
  boundMs: number,
): Promise<StartOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'still starting'>((resolve) => {
    timer = setTimeout(() => resolve('still starting'), boundMs);
  });
  let exitCode: number | string | undefined;
  void service.exited.then((code) => (exitCode = code));
  try {
    const first = await Promise.race([service.listening, bound]);
    if (first === 'still starting') return first;
    if (first === undefined) return { exited: await service.exited };
    for (;;) {
      const status = await fetch(`http://127.0.0.1:${first.health}/health`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) return { healthy: first };
      if (exitCode !== undefined) return { exited: exitCode };
      const next = await Promise.race([service.exited, bound, pause(50)]);
      if (next === 'still starting') return next;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until healthy (30 s at most) and gives the ports; else kills it and throws. */
export async function untilHealthy(
  service: ServiceProcess,
  what: string,
  boundMs = 30_000,
): Promise<BoundPorts> {
  const outcome = await startOutcomeOf(service, boundMs);
  if (outcome === 'still starting') {
    await service.stop('SIGKILL');
    throw new Error(`${what} was not healthy within ${boundMs} ms:\n${service.output()}`);
  }
  if ('exited' in outcome) {
    throw new Error(
      `${what} exited with ${outcome.exited} before it was healthy:\n${service.output()}`,
    );
  }
  return outcome.healthy;
}
