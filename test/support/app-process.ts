import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './free-port.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const MAIN = join(ROOT, 'dist/main.js');

export interface StartOptions {
  /** Extra or overriding environment variables. */
  env?: Record<string, string | undefined>;
  /** Reuse a data folder (restart tests); a new temporary one otherwise. */
  dataDir?: string;
  /** Wait for GET /health to answer 200 (default true). */
  waitForHealth?: boolean;
  /** `mcp-servers.json` contents; `{"mcpServers":{}}` in a new temporary folder by default. */
  mcpServers?: unknown;
}

export interface RunningApp {
  apiUrl: string;
  healthUrl: string;
  metricsUrl: string;
  token: string;
  dataDir: string;
  configDir: string;
  env: Record<string, string>;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `plant-store-${prefix}-`));
}

export const newToken = (): string => randomBytes(24).toString('base64url');

/**
 * Starts `node dist/main.js` as a real process on free loopback ports. A port taken by some
 * other process between the pick and the bind is not the app's fault: pick again (twice at most).
 */
export async function startApp(options: StartOptions = {}): Promise<RunningApp> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnApp(options);
    } catch (error) {
      if (attempt === 3 || !String(error).includes('EADDRINUSE')) throw error;
    }
  }
}

async function spawnApp(options: StartOptions): Promise<RunningApp> {
  const [port, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const dataDir = options.dataDir ?? tempDir('data');
  const configDir = tempDir('config');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(
    join(configDir, 'mcp-servers.json'),
    JSON.stringify(options.mcpServers ?? { mcpServers: {} }),
  );
  const token = newToken();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    SERVICE_HEALTH_CHECK_PORT: String(healthPort),
    SERVICE_METRICS_PORT: String(metricsPort),
    SERVICE_CONFIG_DIR: configDir,
    SERVICE_REPOS_DIR: dataDir,
    SERVICE_LOG_LEVEL: 'info',
    DATA_DIR: dataDir,
    API_TOKENS: token,
    NO_COLOR: '1',
  };
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolveExit) =>
    child.on('exit', (code, signal) => resolveExit(code ?? signal ?? -1)),
  );

  const app: RunningApp = {
    apiUrl: `http://127.0.0.1:${port}`,
    healthUrl: `http://127.0.0.1:${healthPort}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    token: env.API_TOKENS === token ? token : '',
    dataDir,
    configDir,
    env,
    child,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };

  if (options.waitForHealth ?? true) {
    await waitForHealthy(app);
  }
  return app;
}

async function waitForHealthy(app: RunningApp, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitedWith: number | string | undefined;
  void app.exited.then((code) => (exitedWith = code));
  while (Date.now() < deadline) {
    if (exitedWith !== undefined) {
      throw new Error(`app exited with ${exitedWith} before it was healthy:\n${app.output()}`);
    }
    try {
      const response = await fetch(`${app.healthUrl}/health`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await app.stop('SIGKILL');
  throw new Error(`app was not healthy within ${timeoutMs} ms:\n${app.output()}`);
}
