import { createServer, type RequestListener, type Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { Logger } from 'pino';
import { boundPort } from '../http/bound-port.js';
import { ConnectionDrain } from '../http/connection-drain.js';
import { createLogger } from '../logging/logger.js';
import { startUpLogger } from '../logging/start-up-logger.js';
import { startTracing } from '../tracing/tracing.js';
import {
  connectionLimiter,
  createOrExit,
  exitCannotListen,
  type ListenerLimits,
  listenNamed,
  loadConfigOrExit,
  stopOnSignals,
} from './process-lifecycle.js';
import type { EntryPointConfig } from './run-http-app.js';

/** A worker's two listeners: probes and metrics, no API. */
export type ProbePorts = Record<'health' | 'metrics', number>;

export interface ProbeListeners {
  host: string;
  ports: ProbePorts;
  /** The variable that sets each port, named when that port cannot be listened on. */
  portVariables: Record<keyof ProbePorts, string>;
}

/** What differs between worker entry points (today the webhook worker). */
export interface WorkerEntryPoint<C extends EntryPointConfig> {
  /** Validates the environment; a ConfigError is printed and exits 78 (EX_CONFIG). */
  loadConfig(): C;
  /** NestFactory.createApplicationContext with the worker's module: init hooks included. */
  createContext(config: C, logger: Logger): Promise<INestApplicationContext>;
  listeners(config: C): ProbeListeners;
  /** What answers the requests of each listener; every other path is theirs to refuse. */
  handlers(context: INestApplicationContext): Record<keyof ProbePorts, RequestListener>;
  connectionLimits?(context: INestApplicationContext, config: C): ListenerLimits;
  /** The start-up line, once both ports listen, with the bound ports. */
  announce(config: C, logger: Logger, ports: ProbePorts): void;
}

/**
 * A process that serves no API: a Nest application context (no HTTP adapter, no router), and
 * its health and metrics on two plain node:http listeners, nothing else bound. The lifecycle
 * is the HTTP entry points': exit 78 on bad config, exit 1 with one line if it cannot start or
 * a port is taken, the drain and shutdown hooks on SIGTERM, SIGINT and SIGHUP.
 */
export async function runWorker<C extends EntryPointConfig>(
  entry: WorkerEntryPoint<C>,
): Promise<void> {
  const config = loadConfigOrExit(() => entry.loadConfig());
  const logger = createLogger(config);
  await startTracing(config.tracing, config.version, logger);
  const context = await createOrExit(() => entry.createContext(config, logger), logger);
  if (!context) return;
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
