import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ROOT } from './app-process.js';
import { type BoundPorts, spawnService, untilHealthy, withOverrides } from './service-process.js';

export const RELAY_MAIN = join(ROOT, 'dist/bundle/relay-server.js');

export const sha256Entry = (token: string): string =>
  `sha256:${createHash('sha256').update(token).digest('hex')}`;

export interface RelayOptions {
  env: Record<string, string | undefined>;
  /** Wait for GET /health to answer 200 (default true). */
  waitForHealth?: boolean;
  /** node's own options before the entry point, e.g. `--max-old-space-size=192`. */
  nodeArgs?: string[];
}

export interface RunningRelay {
  /** The bound ports; reading one before the start-up line was seen throws. */
  port: number;
  healthUrl: string;
  metricsUrl: string;
  child: ChildProcess;
  output(): string;
  exited: Promise<number | string>;
  listening: Promise<BoundPorts | undefined>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/**
 * Starts `node dist/bundle/relay-server.js` as a real process with its three ports 0, and reads
 * the ports it bound from its "relay server listening" line.
 */
export async function startRelay(options: RelayOptions): Promise<RunningRelay> {
  const env = withOverrides(
    {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      RELAY_HOST: '127.0.0.1',
      RELAY_PORT: '0',
      RELAY_HEALTH_CHECK_PORT: '0',
      RELAY_METRICS_PORT: '0',
      RELAY_LOG_LEVEL: 'info',
      NO_COLOR: '1',
    },
    options.env,
  );
  const service = await spawnService({
    args: [...(options.nodeArgs ?? []), RELAY_MAIN],
    env,
    startLine: 'relay server listening',
  });
  let ports: BoundPorts | undefined;
  void service.listening.then((bound) => (ports = bound));
  const bound = (listener: keyof BoundPorts) => {
    if (!ports) throw new Error(`the relay has not logged its ports (yet):\n${service.output()}`);
    return ports[listener];
  };
  const relay: RunningRelay = {
    get port() {
      return bound('api');
    },
    get healthUrl() {
      return `http://127.0.0.1:${bound('health')}`;
    },
    get metricsUrl() {
      return `http://127.0.0.1:${bound('metrics')}`;
    },
    ...service,
  };
  if (options.waitForHealth ?? true) ports = await untilHealthy(service, 'relay');
  return relay;
}
