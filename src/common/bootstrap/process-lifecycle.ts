import type { Server } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { Logger } from 'pino';
import { orTimeout } from '../async/or-timeout.js';
import { errorMessage } from '../errors/error-message.js';
import type { ConnectionDrain } from '../http/connection-drain.js';
import {
  type ConnectionLimits,
  type ConnectionRefusal,
  limitConnections,
} from '../http/connection-limits.js';
import { applyServerLimits } from '../http/http-server-limits.js';
import type { LoggerConfig } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { stopTracing } from '../tracing/tracing.js';

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
export type Limiter = Record<'api' | 'probe', (server: Server) => void>;

/** Each listener's server limits and connection caps; a refusal is counted and logged. */
export function connectionLimiter(setting: ListenerLimits | undefined, logger: Logger): Limiter {
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
export interface PortSetting {
  port: number;
  host: string;
  variable: string;
}

/**
 * Listens (with `listen`, else `server.listen`) and returns the bound port: the configured one,
 * or the kernel's pick for 0. A failure names the variable that set the port, as `EADDRINUSE`
 * alone does not.
 */
export async function listenNamed(
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

/**
 * A port in use or an address not this host's: stop what started and exit 1 with one line,
 * without waiting on a shutdown step that hangs (a process without its probes must not linger).
 */
export async function exitCannotListen(
  app: INestApplicationContext,
  error: unknown,
  logger: Logger,
): Promise<never> {
  logger.fatal({ reason: errorMessage(error) }, 'cannot listen');
  await orTimeout(
    app.close().catch(() => undefined),
    SHUTDOWN_GRACE_MS,
  );
  return exitAfterLog(logger, undefined, 1);
}

/**
 * On SIGTERM, SIGINT and SIGHUP: stop accepting, let in-flight requests finish (10 s at most),
 * run the shutdown hooks, exit 0. SIGHUP too: a closed terminal stops the process cleanly.
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

function exitAfterLog(logger: Logger, message: string | undefined, code: number): never {
  if (message) logger.info(message);
  logger.flush();
  process.exit(code);
}
