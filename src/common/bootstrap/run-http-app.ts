import { createServer, type Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { boundPort } from '../http/bound-port.js';
import { ConnectionDrain } from '../http/connection-drain.js';
import type { PortScope } from '../http/port-scope.js';
import { createLogger, type LoggerConfig } from '../logging/logger.js';
import { startUpLogger } from '../logging/start-up-logger.js';
import { startTracing } from '../tracing/tracing.js';
import {
  connectionLimiter,
  createOrExit,
  exitCannotListen,
  type Limiter,
  type ListenerLimits,
  listenNamed,
  loadConfigOrExit,
  namingPort,
  stopOnSignals,
} from './process-lifecycle.js';

/**
 * The listeners of one process: the public port (`api`), and the probe and metrics ports, all
 * served by the same Express app. 0 means any free port: the bound ones are announced.
 */
export interface Listeners {
  host: string;
  ports: PortScope;
  /** The variable that sets each port, named when that port cannot be listened on. */
  portVariables: Record<keyof PortScope, string>;
}

/** What every entry point's config holds beside its own settings. */
export interface EntryPointConfig extends LoggerConfig {
  version: string;
}

/** What differs between the entry points (the plant service, the relay server). */
export interface HttpEntryPoint<C extends EntryPointConfig> {
  /**
   * Validates the environment (the entry point hands process.env over: only config and the
   * entry points read it); a ConfigError is printed and exits 78 (EX_CONFIG).
   */
  loadConfig(): C;
  /** NestFactory.create with the entry point's module and adapter options. */
  createApp(config: C, logger: Logger): Promise<NestExpressApplication>;
  /**
   * Middleware and routes set up on the app before it listens. `ports` reads the ports in use:
   * the configured ones until each listener is bound, then the bound ones.
   */
  configure?(app: NestExpressApplication, config: C, ports: () => PortScope): void;
  listeners(config: C): Listeners;
  /**
   * The start-up line (and banner), once every port listens, with the bound ports: with a port
   * configured as 0 that line is where a caller learns them, so `logger` then writes it even
   * at the warn, error or fatal level.
   */
  announce(app: NestExpressApplication, config: C, logger: Logger, ports: PortScope): void;
  /**
   * Runs on a signal after the listeners stopped accepting and before the drain waits for the
   * requests in flight: whatever would otherwise hold them (the relay's agent connections,
   * whose waiting clients are answered when they close).
   */
  beforeDrain?(app: NestExpressApplication): void | Promise<void>;
  /**
   * Caps on the open connections of each listener, and what counts the connections refused
   * (a metric of the entry point's own). Without it the listeners take any number.
   */
  connectionLimits?(app: NestExpressApplication, config: C): ListenerLimits;
}

/**
 * The one bootstrap of every HTTP entry point: load the config (exit 78 naming every problem),
 * create the app (exit 1 with one line if it cannot start), listen on every port with the
 * plant API's server limits (exit 1 if a port is taken), announce, and shut down on SIGTERM,
 * SIGINT and SIGHUP with a ConnectionDrain: stop accepting and answer `Connection: close` from
 * the signal on, let in-flight requests finish (10 s at most), then run Nest's shutdown hooks
 * and exit 0. SIGHUP is not a reload: a closed terminal or a supervisor's hang-up stops the
 * process cleanly instead of killing it at once.
 */
export async function runHttpApp<C extends EntryPointConfig>(
  entry: HttpEntryPoint<C>,
): Promise<void> {
  const config = loadConfigOrExit(() => entry.loadConfig());
  const logger = createLogger(config);
  await startTracing(config.tracing, config.version, logger);
  const app = await createOrExit(() => entry.createApp(config, logger), logger);
  if (!app) return;
  const listeners = entry.listeners(config);
  const configured = listeners.ports;
  const ports: PortScope = { ...configured };
  entry.configure?.(app, config, () => ports);

  const limit = connectionLimiter(entry.connectionLimits?.(app, config), logger);
  const extra = await listenOnEveryPort(app, listeners, ports, limit, logger);
  entry.announce(
    app,
    config,
    startUpLogger(logger, [configured.api, configured.health, configured.metrics]),
    { ...ports },
  );
  const drain = new ConnectionDrain([app.getHttpServer(), ...extra]);
  stopOnSignals(app, drain, logger, () => entry.beforeDrain?.(app));
}

/**
 * Listens on the api port with the app's own server and on the health and metrics ports with
 * servers of their own, writing each bound port into `ports`. Returns those extra servers; if
 * any port cannot be listened on, closes the app and exits 1.
 */
async function listenOnEveryPort(
  app: NestExpressApplication,
  { host, ports: configured, portVariables }: Listeners,
  ports: PortScope,
  limit: Limiter,
  logger: Logger,
): Promise<Server[]> {
  const on = (listener: keyof PortScope) => ({
    port: configured[listener],
    host,
    variable: portVariables[listener],
  });
  try {
    limit.api(app.getHttpServer());
    // Nest's own listen: it also runs the modules' init and bootstrap hooks.
    await app.listen(configured.api, host).catch(namingPort(on('api')));
    ports.api = boundPort(app.getHttpServer());
    return await Promise.all(
      (['health', 'metrics'] as const).map(async (listener) => {
        const server = createServer(app.getHttpAdapter().getInstance());
        limit.probe(server);
        await listenNamed(server, on(listener));
        ports[listener] = boundPort(server);
        return server;
      }),
    );
  } catch (error) {
    return exitCannotListen(app, error, logger);
  }
}
