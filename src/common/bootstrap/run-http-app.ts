import { createServer, type Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { ConfigError, EX_CONFIG } from '../../config/shared/config-error.js';
import { orTimeout } from '../async/or-timeout.js';
import { errorMessage } from '../errors/error-message.js';
import { ConnectionDrain } from '../http/connection-drain.js';
import {
  type ConnectionLimits,
  type ConnectionRefusal,
  limitConnections,
} from '../http/connection-limits.js';
import { applyServerLimits } from '../http/http-server-limits.js';
import type { PortScope, ProbePorts } from '../http/port-scope.js';
import { createLogger, type LoggerConfig, startUpLogger } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { startTracing, stopTracing } from '../tracing/tracing.js';

/** In-flight requests get this long to finish after a signal before connections are cut. */
const SHUTDOWN_GRACE_MS = 10_000;

export interface EntryPointConfig extends LoggerConfig {
  version: string;
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

/** Health, metrics and the API (none for the webhook worker); a port of 0 is any free one. */
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
  // On a signal, before the drain waits for the requests in flight: what would hold them (the
  // relay's agent connections, whose waiting clients are answered when they close).
  beforeDrain?(app: NestExpressApplication): void | Promise<void>;
  /** Caps on each listener's connections and what counts refusals; none without it. */
  connectionLimits?(app: NestExpressApplication, config: C): ListenerLimits;
}

/** The one bootstrap of every HTTP entry point: config (exit 78), logger, tracing, app, stop. */
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

// The API's listener with Nest's own listen, which also runs the modules' init and bootstrap
// hooks; without an API port (the worker), the init alone and no listener.
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
  const listen = () => app.listen(port, host);
  (ports as Partial<PortScope>).api = await listenNamed(server, { port, host, variable }, listen);
  return [server];
}

// The health and metrics listeners, each a server of its own, writing their bound ports into
// `ports`. One after the other: when both are taken, the first one's variable is named.
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

/** Each listener's server limits and connection caps; a refusal is counted and logged. */
function connectionLimiter(setting: ListenerLimits | undefined, logger: Logger): Limiter {
  // Anyone can open connections: one line per 10 s at most, the metric counts every one.
  const log = new RateLimitedLog(logger, { ratePerSecond: 0.1, burst: 1 });
  const apply = (limits: ConnectionLimits | undefined) => (server: Server) => {
    applyServerLimits(server, limits);
    if (!setting || !limits) return;
    limitConnections(server, limits, (reason, address) => {
      setting.refused(reason);
      log.warn({ reason, remote: address }, 'connection refused or closed before a request');
    });
  };
  return { api: apply(setting?.limits), probe: apply(setting?.probeLimits ?? setting?.limits) };
}

/** A listener's port, its address and the variable that set it. */
interface PortSetting {
  port: number;
  host: string;
  variable: string;
}

// Returns the bound port (the kernel's pick for 0). A failure names the variable that set the
// port, as `EADDRINUSE` alone does not.
async function listenNamed(
  server: Server,
  { port, host, variable }: PortSetting,
  listen: () => Promise<unknown> = () =>
    new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(port, host, resolve),
    ),
): Promise<number> {
  await listen().catch((error: unknown) => {
    throw new Error(`${variable}=${port} on ${host}: ${errorMessage(error)}`);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('the server is not listening on a TCP port');
  }
  return address.port;
}

// A port in use or an address not this host's: stop what started and exit 1 with one line,
// without waiting on a shutdown step that hangs (a process without its probes must not linger).
async function exitCannotListen(
  app: INestApplicationContext,
  error: unknown,
  logger: Logger,
): Promise<never> {
  logger.fatal({ reason: errorMessage(error) }, 'cannot listen');
  const closed = app.close().catch(() => undefined);
  await orTimeout(closed, SHUTDOWN_GRACE_MS);
  return exitAfterLog(logger, undefined, 1);
}

// On SIGTERM, SIGINT and SIGHUP: stop accepting, let in-flight requests finish (10 s at most),
// run the shutdown hooks, exit 0. SIGHUP too: a closed terminal stops the process cleanly.
function stopOnSignals(
  app: INestApplicationContext,
  drain: ConnectionDrain,
  logger: Logger,
  beforeDrain?: () => void | Promise<void>,
): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const drained = drain.drain(SHUTDOWN_GRACE_MS);
    Promise.resolve()
      .then(() => beforeDrain?.())
      // The drain and Nest's shutdown hooks (the database closed, marks written) still run.
      .catch((error: unknown) =>
        logger.error({ reason: errorMessage(error) }, 'shutdown step failed'),
      )
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
      .then(() => exitAfterLog(logger, 'stopped', 0))
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        exitAfterLog(logger, undefined, 1);
      });
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
}

// No logger.flush(), whose write the exit could cut: pino's exit handler writes synchronously.
function exitAfterLog(logger: Logger, message: string | undefined, code: number): never {
  if (message) logger.info(message);
  process.exit(code);
}
