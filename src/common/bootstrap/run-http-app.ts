import { createServer, type Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { ConnectionDrain } from '../http/connection-drain.js';
import type { PortScope, ProbePorts } from '../http/port-scope.js';
import { ConfigError, EX_CONFIG } from '../../config/shared/config-error.js';
import { errorMessage } from '../errors/error-message.js';
import { createLogger, startUpLogger } from '../logging/logger.js';
import { startTracing } from '../tracing/tracing.js';
import {
  connectionLimiter,
  type EntryPointConfig,
  exitCannotListen,
  type Limiter,
  type ListenerLimits,
  listenNamed,
  stopOnSignals,
} from './process-lifecycle.js';

/**
 * A process's listeners: health, metrics and, unless it serves no API (the webhook worker), the
 * API's (the default); a port of 0 is any free one.
 */
export interface Listeners<P extends ProbePorts = PortScope> {
  host: string;
  ports: P;
  /** The variable that sets each port, named when that port cannot be listened on. */
  portVariables: Record<keyof P, string>;
}

/** What differs between the entry points (the plant service, the relay server, the worker). */
export interface HttpEntryPoint<C extends EntryPointConfig, P extends ProbePorts = PortScope> {
  /** Validates the environment (only config and the entry points read process.env). */
  loadConfig(): C;
  createApp(config: C, logger: Logger): Promise<NestExpressApplication>;
  /** Set-up before listening; `ports` gives the bound ports once each listener is up. */
  configure?(app: NestExpressApplication, config: C, ports: () => P): void;
  listeners(config: C): Listeners<P>;
  /** The start-up line once every port listens: with a port of 0, where a caller learns it. */
  announce(app: NestExpressApplication, config: C, logger: Logger, ports: P): void;
  /**
   * On a signal, before the drain waits for the requests in flight: what would hold them (the
   * relay's agent connections, whose waiting clients are answered when they close).
   */
  beforeDrain?(app: NestExpressApplication): void | Promise<void>;
  /** Caps on each listener's connections and what counts refusals; none without it. */
  connectionLimits?(app: NestExpressApplication, config: C): ListenerLimits;
}

/**
 * The one bootstrap of every HTTP entry point: the config (exit 78), logger, tracing, the app,
 * its listeners, then the stop on a signal.
 */
export async function runHttpApp<C extends EntryPointConfig, P extends ProbePorts = PortScope>(
  entry: HttpEntryPoint<C, P>,
): Promise<void> {
  let config: C;
  try {
    config = entry.loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EX_CONFIG);
  }
  const logger = createLogger(config);
  await startTracing(config.tracing, config.version, logger);
  let app: NestExpressApplication;
  try {
    app = await entry.createApp(config, logger);
  } catch (error) {
    // One line and exit code 1 for what failed before listening (the store, the files).
    logger.fatal({ reason: errorMessage(error) }, 'cannot start');
    logger.flush();
    process.exitCode = 1;
    return;
  }
  const listeners = entry.listeners(config);
  const ports: P = { ...listeners.ports };
  entry.configure?.(app, config, () => ports);

  const limit = connectionLimiter(entry.connectionLimits?.(app, config), logger);
  let servers: Server[];
  try {
    const api = await listenApi(app, listeners, ports, limit);
    servers = [...api, ...(await listenProbes(app, listeners, ports, limit))];
  } catch (error) {
    return exitCannotListen(app, error, logger);
  }
  entry.announce(app, config, startUpLogger(logger, Object.values(listeners.ports)), { ...ports });
  stopOnSignals(app, new ConnectionDrain(servers), logger, () => entry.beforeDrain?.(app));
}

/**
 * The API's listener with Nest's own listen, which also runs the modules' init and bootstrap
 * hooks; without an API port (the worker), the init alone and no listener.
 */
async function listenApi<P extends ProbePorts>(
  app: NestExpressApplication,
  { host, ports: configured, portVariables }: Listeners<P>,
  ports: P,
  limit: Limiter,
): Promise<Server[]> {
  const port = (configured as Partial<PortScope>).api;
  if (port === undefined) return app.init().then(() => []);
  const server = app.getHttpServer();
  limit.api(server);
  const variable = (portVariables as Record<keyof PortScope, string>).api;
  (ports as Partial<PortScope>).api = await listenNamed(server, { port, host, variable }, () =>
    app.listen(port, host),
  );
  return [server];
}

/**
 * The health and metrics listeners, each a server of its own, writing their bound ports into
 * `ports`. One after the other: when both are taken, the first one's variable is named.
 */
async function listenProbes<P extends ProbePorts>(
  app: NestExpressApplication,
  { host, ports: configured, portVariables }: Listeners<P>,
  ports: P,
  limit: Limiter,
): Promise<Server[]> {
  const servers: Server[] = [];
  try {
    for (const listener of ['health', 'metrics'] as const) {
      const server = createServer(app.getHttpAdapter().getInstance());
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
