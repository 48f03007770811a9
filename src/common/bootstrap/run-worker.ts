import { createServer, type RequestListener, type Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { Logger } from 'pino';
import { boundPort } from '../http/bound-port.js';
import { ConnectionDrain } from '../http/connection-drain.js';
import { startUpLogger } from '../logging/start-up-logger.js';
import {
  connectionLimiter,
  type EntryPointConfig,
  exitCannotListen,
  type ListenerLimits,
  listenNamed,
  startProcess,
  stopOnSignals,
} from './process-lifecycle.js';
import type { Listeners } from './run-http-app.js';

type ProbePorts = Record<'health' | 'metrics', number>;

export interface WorkerEntryPoint<C extends EntryPointConfig> {
  loadConfig(): C;
  createContext(config: C, logger: Logger): Promise<INestApplicationContext>;
  listeners(config: C): Listeners<ProbePorts>;
  /** What answers the requests of each listener; every other path is theirs to refuse. */
  handlers(context: INestApplicationContext): Record<keyof ProbePorts, RequestListener>;
  connectionLimits?(context: INestApplicationContext, config: C): ListenerLimits;
  announce(config: C, logger: Logger, ports: ProbePorts): void;
}

/** A process without an API: an application context, its probes on two plain listeners. */
export async function runWorker<C extends EntryPointConfig>(
  entry: WorkerEntryPoint<C>,
): Promise<void> {
  const started = await startProcess(
    () => entry.loadConfig(),
    (config, logger) => entry.createContext(config, logger),
  );
  if (!started) return;
  const { config, logger, app: context } = started;
  const listeners = entry.listeners(config);
  const limit = connectionLimiter(entry.connectionLimits?.(context, config), logger);
  const handlers = entry.handlers(context);
  const servers: Server[] = [];
  const ports = { ...listeners.ports };
  try {
    // One after the other: when both are taken, the first one's variable is named.
    for (const listener of ['health', 'metrics'] as const) {
      const server = createServer(handlers[listener]);
      limit.probe(server);
      servers.push(server);
      await listenNamed(server, {
        port: listeners.ports[listener],
        host: listeners.host,
        variable: listeners.portVariables[listener],
      });
      ports[listener] = boundPort(server);
    }
  } catch (error) {
    for (const server of servers) server.close();
    return exitCannotListen(context, error, logger);
  }
  const configured = Object.values(listeners.ports);
  entry.announce(config, startUpLogger(logger, configured), ports);
  stopOnSignals(context, new ConnectionDrain(servers), logger);
}
