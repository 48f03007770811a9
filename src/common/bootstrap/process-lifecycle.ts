import type { Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { Logger } from 'pino';
import { ConfigError, EX_CONFIG } from '../../config/shared/config-error.js';
import type { ConnectionDrain } from '../http/connection-drain.js';
import {
  type ConnectionLimits,
  type ConnectionRefusal,
  limitConnections,
} from '../http/connection-limits.js';
import { applyServerLimits } from '../http/http-server-limits.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { stopTracing } from '../tracing/tracing.js';

/** In-flight requests get this long to finish after a signal before connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** The caps of the api listener, those of the health and metrics ones, and what counts refusals. */
export interface ListenerLimits {
  limits: ConnectionLimits;
  /** The health and metrics listeners' own (`limits` when absent). */
  probeLimits?: ConnectionLimits;
  refused(reason: ConnectionRefusal): void;
}

/** Applies a listener's server limits and connection caps; call before `listen`. */
export type Limiter = Record<'api' | 'probe', (server: Server) => void>;

/** The validated config; a ConfigError is printed and the process exits 78 (EX_CONFIG). */
export function loadConfigOrExit<C>(loadConfig: () => C): C {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EX_CONFIG);
  }
}

/**
 * The app or application context; if it cannot start (a module's factory or init hook threw),
 * one "cannot start" line and exit code 1, and undefined: nothing else is left running.
 */
export async function createOrExit<A>(
  create: () => Promise<A>,
  logger: Logger,
): Promise<A | undefined> {
  try {
    return await create();
  } catch (error) {
    logger.fatal({ reason: reasonOf(error) }, 'cannot start');
    logger.flush();
    process.exitCode = 1;
    return undefined;
  }
}

/**
 * Applies the server limits and the entry point's connection caps to each listener; a refusal
 * is counted and logged. The health and metrics listeners take their own caps when given.
 */
export function connectionLimiter(setting: ListenerLimits | undefined, logger: Logger): Limiter {
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

/** A listener's port, its address and the variable that set it. */
export interface PortSetting {
  port: number;
  host: string;
  variable: string;
}

/**
 * Rethrows a listen failure naming the variable that set the port: `EADDRINUSE 0.0.0.0:8080`
 * alone does not say which setting to change.
 */
export function namingPort({ port, host, variable }: PortSetting) {
  return (error: unknown): never => {
    throw new Error(`${variable}=${port} on ${host}: ${reasonOf(error)}`);
  };
}

/** Listens on the setting's port; a failure names its variable. */
export function listenNamed(server: Server, setting: PortSetting): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    server.once('error', reject);
    server.listen(setting.port, setting.host, () => resolve(server));
  }).catch(namingPort(setting));
}

/**
 * A port in use or an address that is not this host's: stop what started (MCP servers, the
 * database, delivery) and exit 1 with one clear line. The exit does not wait on a shutdown
 * step that hangs: a process that cannot serve its probes must not linger.
 */
export async function exitCannotListen(
  app: INestApplicationContext,
  error: unknown,
  logger: Logger,
): Promise<never> {
  logger.fatal({ reason: reasonOf(error) }, 'cannot listen');
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_GRACE_MS)));
  await Promise.race([app.close().catch(() => undefined), bound]);
  clearTimeout(timer);
  logger.flush();
  process.exit(1);
}

/**
 * On SIGTERM, SIGINT and SIGHUP: stop accepting and let in-flight requests finish (10 s at
 * most) through the drain, then run Nest's shutdown hooks and exit 0. SIGHUP is not a reload:
 * a closed terminal or a supervisor's hang-up stops the process cleanly instead of killing it.
 */
export function stopOnSignals(
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
      .then(() => exitAfterLog(logger, 'stopped', 0))
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        exitAfterLog(logger, undefined, 1);
      });
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
}

function exitAfterLog(logger: Logger, message: string | undefined, code: number): never {
  if (message) logger.info(message);
  logger.flush();
  process.exit(code);
}

export function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
