import { createServer, type Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { ConfigError, EX_CONFIG } from '../../config/shared/config-error.js';
import { boundPort } from '../http/bound-port.js';
import { ConnectionDrain } from '../http/connection-drain.js';
import {
  type ConnectionLimits,
  type ConnectionRefusal,
  limitConnections,
} from '../http/connection-limits.js';
import { applyServerLimits } from '../http/http-server-limits.js';
import type { PortScope } from '../http/port-scope.js';
import { createLogger, type LoggerConfig } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { startUpLogger } from '../logging/start-up-logger.js';
import { startTracing, stopTracing } from '../tracing/tracing.js';

/** In-flight requests get this long to finish after a signal before connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;

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

/** The caps of the api listener, those of the health and metrics ones, and what counts refusals. */
export interface ListenerLimits {
  limits: ConnectionLimits;
  /** The health and metrics listeners' own (`limits` when absent). */
  probeLimits?: ConnectionLimits;
  refused(reason: ConnectionRefusal): void;
}

/** Applies a listener's server limits and connection caps; call before `listen`. */
type Limiter = Record<'api' | 'probe', (server: Server) => void>;

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
  const config = loadConfigOrExit(entry);
  const logger = createLogger(config);
  await startTracing(config.tracing, config.version, logger);

  let app: NestExpressApplication;
  try {
    app = await entry.createApp(config, logger);
  } catch (error) {
    logger.fatal({ reason: reasonOf(error) }, 'cannot start');
    logger.flush();
    process.exitCode = 1;
    return;
  }
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
  handleSignals(app, new ConnectionDrain([app.getHttpServer(), ...extra]), logger, entry);
}

/** The validated config; a ConfigError is printed and the process exits 78 (EX_CONFIG). */
function loadConfigOrExit<C extends EntryPointConfig>(entry: HttpEntryPoint<C>): C {
  try {
    return entry.loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EX_CONFIG);
  }
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
  // Which listener failed, by its variable: `EADDRINUSE 0.0.0.0:8080` alone does not say.
  const naming = (listener: keyof PortScope) => (error: unknown) => {
    throw new Error(
      `${portVariables[listener]}=${configured[listener]} on ${host}: ${reasonOf(error)}`,
    );
  };
  try {
    limit.api(app.getHttpServer());
    await app.listen(ports.api, host).catch(naming('api'));
    ports.api = boundPort(app.getHttpServer());
    return await Promise.all(
      (['health', 'metrics'] as const).map(async (listener) => {
        const server = createServer(app.getHttpAdapter().getInstance());
        limit.probe(server);
        await listen(server, ports[listener], host).catch(naming(listener));
        ports[listener] = boundPort(server);
        return server;
      }),
    );
  } catch (error) {
    // A port in use or an address that is not this host's: stop what started (MCP servers,
    // the database, agent connections) and exit 1 with one clear line.
    logger.fatal({ reason: reasonOf(error) }, 'cannot listen');
    await app.close().catch(() => undefined);
    logger.flush();
    process.exit(1);
  }
}

/**
 * Applies the server limits and the entry point's connection caps to each listener; a refusal
 * is counted and logged. The health and metrics listeners take their own caps when given.
 */
function connectionLimiter(setting: ListenerLimits | undefined, logger: Logger): Limiter {
  // Anyone can open connections: one line per 10 s at most, the metric counts every one.
  const log = new RateLimitedLog(logger, { ratePerSecond: 0.1, burst: 1 });
  const apply = (limits: ConnectionLimits | undefined) => (server: Server) => {
    applyServerLimits(server, limits?.headersTimeoutMs);
    if (!setting || !limits) return;
    limitConnections(server, limits, (reason, address) => {
      setting.refused(reason);
      log.warn({ reason, remote: address }, 'connection refused or closed before a request');
    });
  };
  return { api: apply(setting?.limits), probe: apply(setting?.probeLimits ?? setting?.limits) };
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

function handleSignals<C extends EntryPointConfig>(
  app: NestExpressApplication,
  drain: ConnectionDrain,
  logger: Logger,
  entry: HttpEntryPoint<C>,
): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const drained = drain.drain(SHUTDOWN_GRACE_MS);
    Promise.resolve()
      .then(() => entry.beforeDrain?.(app))
      // The drain and Nest's shutdown hooks (the database closed, marks written) still run.
      .catch((error: unknown) => logger.error({ reason: reasonOf(error) }, 'shutdown step failed'))
      .then(() => drained)
      .then((outcome) => {
        if (outcome === 'cut') {
          logger.warn(
            `requests still in flight after ${SHUTDOWN_GRACE_MS / 1000} s; closed their connections`,
          );
        }
        return app.close();
      })
      // The last spans (the requests that just finished) are sent before the exit.
      .then(() => stopTracing().catch(() => undefined))
      .then(() => {
        logger.info('stopped');
        logger.flush();
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        logger.flush();
        process.exit(1);
      });
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
