import { createServer, type RequestListener, type Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { ConnectionDrain } from '../http/connection-drain.js';
import { type PortScope, portScopeHandler } from '../http/port-scope.js';
import { startUpLogger } from '../logging/logger.js';
import {
  connectionLimiter,
  type EntryPointConfig,
  exitCannotListen,
  type Limiter,
  type ListenerLimits,
  listenNamed,
  startProcess,
  stopOnSignals,
} from './process-lifecycle.js';

type ProbePorts = Pick<PortScope, 'health' | 'metrics'>;

/** A process's listeners (by default api, health and metrics); a port of 0 is any free one. */
export interface Listeners<P extends Partial<PortScope> = PortScope> {
  host: string;
  ports: P;
  /** The variable that sets each port, named when that port cannot be listened on. */
  portVariables: Record<keyof P, string>;
}

/** What differs between the entry points (the plant service, the relay server). */
export interface HttpEntryPoint<C extends EntryPointConfig> {
  /** Validates the environment (only config and the entry points read process.env). */
  loadConfig(): C;
  createApp(config: C, logger: Logger): Promise<NestExpressApplication>;
  /** Set-up before listening; `ports` gives the bound ports once each listener is up. */
  configure?(app: NestExpressApplication, config: C, ports: () => PortScope): void;
  listeners(config: C): Listeners;
  /** The start-up line once every port listens: with a port of 0, where a caller learns it. */
  announce(app: NestExpressApplication, config: C, logger: Logger, ports: PortScope): void;
  /**
   * On a signal, before the drain waits for the requests in flight: what would hold them (the
   * relay's agent connections, whose waiting clients are answered when they close).
   */
  beforeDrain?(app: NestExpressApplication): void | Promise<void>;
  /** Caps on each listener's connections and what counts refusals; none without it. */
  connectionLimits?(app: NestExpressApplication, config: C): ListenerLimits;
}

/** The one bootstrap of every HTTP entry point, from the config to the stop on a signal. */
export async function runHttpApp<C extends EntryPointConfig>(
  entry: HttpEntryPoint<C>,
): Promise<void> {
  const started = await startProcess(
    () => entry.loadConfig(),
    (config, logger) => entry.createApp(config, logger),
  );
  if (!started) return;
  const { config, logger, app } = started;
  const listeners = entry.listeners(config);
  const { host, ports: configured, portVariables } = listeners;
  const ports: PortScope = { ...configured };
  entry.configure?.(app, config, () => ports);

  const limit = connectionLimiter(entry.connectionLimits?.(app, config), logger);
  let probes: Server[];
  try {
    limit.api(app.getHttpServer());
    // Nest's own listen: it also runs the modules' init and bootstrap hooks.
    const api = { port: configured.api, host, variable: portVariables.api };
    ports.api = await listenNamed(app.getHttpServer(), api, () => app.listen(configured.api, host));
    const express = app.getHttpAdapter().getInstance();
    probes = await listenProbes(express, listeners, ports, limit);
  } catch (error) {
    return exitCannotListen(app, error, logger);
  }
  entry.announce(app, config, startUpLogger(logger, Object.values(configured)), { ...ports });
  const drain = new ConnectionDrain([app.getHttpServer(), ...probes]);
  stopOnSignals(app, drain, logger, () => entry.beforeDrain?.(app));
}

export interface WorkerEntryPoint<C extends EntryPointConfig> {
  loadConfig(): C;
  createApp(config: C, logger: Logger): Promise<NestExpressApplication>;
  listeners(config: C): Listeners<ProbePorts>;
  connectionLimits?(app: INestApplicationContext, config: C): ListenerLimits;
  announce(config: C, logger: Logger, ports: ProbePorts): void;
}

/** A process without an API: its app serves only the health and metrics listeners. */
export async function runWorker<C extends EntryPointConfig>(
  entry: WorkerEntryPoint<C>,
): Promise<void> {
  const ports: ProbePorts = { health: 0, metrics: 0 }; // the bound ones, once listening
  const started = await startProcess(
    () => entry.loadConfig(),
    async (config, logger) => {
      const app = await entry.createApp(config, logger);
      // Ahead of the routes, which init sets up: each port serves only its own paths.
      app.use(portScopeHandler(() => ports));
      return app.init();
    },
  );
  if (!started) return;
  const { config, logger, app } = started;
  const listeners = entry.listeners(config);
  const limit = connectionLimiter(entry.connectionLimits?.(app, config), logger);
  const express = app.getHttpAdapter().getInstance();
  let servers: Server[];
  try {
    servers = await listenProbes(express, listeners, ports, limit);
  } catch (error) {
    return exitCannotListen(app, error, logger);
  }
  entry.announce(config, startUpLogger(logger, Object.values(listeners.ports)), ports);
  stopOnSignals(app, new ConnectionDrain(servers), logger);
}

/**
 * The health and metrics listeners, each a server of its own, writing their bound ports into
 * `ports`. One after the other: when both are taken, the first one's variable is named.
 */
async function listenProbes(
  handler: RequestListener,
  { host, ports: configured, portVariables }: Listeners<ProbePorts>,
  ports: ProbePorts,
  limit: Limiter,
): Promise<Server[]> {
  const servers: Server[] = [];
  try {
    for (const listener of ['health', 'metrics'] as const) {
      const server = createServer(handler);
      limit.probe(server);
      servers.push(server);
      const variable = portVariables[listener];
      ports[listener] = await listenNamed(server, { port: configured[listener], host, variable });
    }
    return servers;
  } catch (error) {
    for (const server of servers) server.close();
    throw error;
  }
}
