import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { ROOT } from './app-process.js';

export const RELAY_MAIN = join(ROOT, 'dist/relay-server/main.js');

export const sha256Entry = (token: string): string =>
  `sha256:${createHash('sha256').update(token).digest('hex')}`;

export interface RelayOptions {
  env: Record<string, string | undefined>;
  /** Wait for GET /health to answer 200 (default true). */
  waitForHealth?: boolean;
}

export interface RunningRelay {
  port: number;
  healthUrl: string;
  metricsUrl: string;
  child: ChildProcess;
  output(): string;
  exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Starts `node dist/relay-server/main.js` as a real process on free loopback ports. */
export async function startRelay(options: RelayOptions): Promise<RunningRelay> {
  const [port, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    RELAY_HOST: '127.0.0.1',
    RELAY_PORT: String(port),
    RELAY_HEALTH_CHECK_PORT: String(healthPort),
    RELAY_METRICS_PORT: String(metricsPort),
    RELAY_LOG_LEVEL: 'info',
    NO_COLOR: '1',
  };
  for (const [key, value] of Object.entries(options.env)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  const child = spawn(process.execPath, [RELAY_MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolveExit) =>
    child.on('exit', (code, signal) => resolveExit(code ?? signal ?? -1)),
  );
  const relay: RunningRelay = {
    port,
    healthUrl: `http://127.0.0.1:${healthPort}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    child,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  if (options.waitForHealth ?? true) {
    const deadline = Date.now() + 30_000;
    let exitedWith: number | string | undefined;
    void exited.then((code) => (exitedWith = code));
    for (;;) {
      if (exitedWith !== undefined) {
        throw new Error(`relay exited with ${exitedWith} before it was healthy:\n${output}`);
      }
      const status = await fetch(`${relay.healthUrl}/health`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      if (Date.now() > deadline) {
        await relay.stop('SIGKILL');
        throw new Error(`relay was not healthy within 30 s:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return relay;
}
