import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BoundPorts, spawnService, untilHealthy, withOverrides } from './service-process.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const MAIN = join(ROOT, 'dist/bundle/main.js');
export const WEBHOOK_WORKER = join(ROOT, 'dist/bundle/webhook-worker.js');

export interface StartOptions {
  /** Extra or overriding environment variables. */
  env?: Record<string, string | undefined>;
  /** Reuse a data folder (restart tests); a new temporary one otherwise. */
  dataDir?: string;
  /** Wait for GET /health to answer 200 (default true). */
  waitForHealth?: boolean;
  /** `mcp-servers.json` contents; `{"mcpServers":{}}` in a new temporary folder by default. */
  mcpServers?: unknown;
  /** Start the webhook worker (dist/bundle/webhook-worker.js) instead of the service. */
  webhookWorker?: boolean;
  /** Another build's bundle to start instead of this checkout's (benchmarks compare two). */
  main?: string;
}

export interface RunningApp {
  /** The URLs of the bound ports; reading one before the start-up line was seen throws. */
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
  /** The bound ports from the start-up line; undefined when the process exits without one. */
  listening: Promise<BoundPorts | undefined>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `plant-store-${prefix}-`));
}

export const newToken = (): string => randomBytes(24).toString('base64url');

/**
 * Starts `node dist/bundle/main.js` (what `npm start` and the image run) as a real process with PORT, SERVICE_HEALTH_CHECK_PORT and
 * SERVICE_METRICS_PORT 0, and reads the ports it bound from its "Plant Store listening" line.
 */
export async function startApp(options: StartOptions = {}): Promise<RunningApp> {
  const dataDir = options.dataDir ?? tempDir('data');
  const configDir = tempDir('config');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(
    join(configDir, 'mcp-servers.json'),
    JSON.stringify(options.mcpServers ?? { mcpServers: {} }),
  );
  const token = newToken();
  const env = withOverrides(
    {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: '0',
      SERVICE_HEALTH_CHECK_PORT: '0',
      SERVICE_METRICS_PORT: '0',
      SERVICE_CONFIG_DIR: configDir,
      SERVICE_REPOS_DIR: dataDir,
      SERVICE_LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      API_TOKENS: token,
      NO_COLOR: '1',
    },
    options.env,
  );
  const service = await spawnService(
    options.webhookWorker
      ? { args: [WEBHOOK_WORKER], env, startLine: 'webhook worker running' }
      : { args: [options.main ?? MAIN], env, startLine: 'Plant Store listening' },
  );
  let ports: BoundPorts | undefined;
  void service.listening.then((bound) => (ports = bound));
  const url = (listener: keyof BoundPorts) => {
    if (!ports) throw new Error(`the app has not logged its ports (yet):\n${service.output()}`);
    return `http://127.0.0.1:${ports[listener]}`;
  };
  const app: RunningApp = {
    get apiUrl() {
      return url('api');
    },
    get healthUrl() {
      return url('health');
    },
    get metricsUrl() {
      return url('metrics');
    },
    token: env.API_TOKENS === token ? token : '',
    dataDir,
    configDir,
    env,
    ...service,
  };
  if (options.waitForHealth ?? true) ports = await untilHealthy(service, 'app');
  return app;
}
