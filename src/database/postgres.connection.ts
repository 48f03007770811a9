import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors/error-message.js';
import { Backoff } from '../common/retry/backoff.js';
import type { Database } from './database.types.js';
import { type AcquireFailure, FailoverAwarePool } from './failover-aware-pool.js';

/** int8 (OID 20) as BigInt instead of node-postgres's default string. */
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, (value: string) => BigInt(value));

export interface PostgresOptions {
  target: string;
  startupTimeoutMs: number;
  logger: Logger;
}

/**
 * The pool's budget (DATABASE_POOL_*): what this process may hold of `max_connections`. The
 * defaults are for tests that open a store directly.
 */
const DEFAULT_POOL = { max: 10, idleTimeoutMs: 10_000, maxLifetimeMs: 60_000 };

type PoolSettings = typeof DEFAULT_POOL;

export interface OpenPostgresOptions {
  url: string;
  logger: Logger;
  pool?: PoolSettings;
  onAcquireFailure?: (reason: AcquireFailure) => void;
  /** How long a query may go unanswered (10 s; tests shorten it). */
  readTimeoutMs?: number;
}

export function openPostgres(options: OpenPostgresOptions): Kysely<Database> {
  const settings = options.pool ?? DEFAULT_POOL;
  const pool = new pg.Pool({
    connectionString: options.url,
    types,
    max: settings.max,
    // Fail a request fast (503) when the server is unreachable instead of queueing it.
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: settings.idleTimeoutMs,
    // A connection made while the address reached a server that is no longer the primary
    // must not outlive the failover by long, even if it only ever reads.
    maxLifetimeSeconds: settings.maxLifetimeMs / 1000,
    statement_timeout: 10_000,
    keepAlive: true,
    application_name: 'plant-store',
  });
  // A dying connection emits 'error' on the pool (idle) or on its client (checked out):
  // unhandled, it would crash the process. The query in flight already failed (503).
  const lost = (error: Error) =>
    options.logger.warn({ reason: error.message }, 'PostgreSQL connection lost');
  pool.on('error', lost);
  pool.on('connect', (client) => client.on('error', lost));
  const failoverAware = new FailoverAwarePool(
    pool,
    options.onAcquireFailure ?? (() => {}),
    options.readTimeoutMs,
  );
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: failoverAware }) });
}

/** Refusals that waiting will not change: wrong password, no such role or database. */
const REFUSALS: Record<string, string> = {
  '28P01': 'refused the login: check the user and password of DATABASE_URL (or PGPASSWORD)',
  '28000':
    "refused the login: check the user of DATABASE_URL and the server's pg_hba.conf for this client",
  '3D000': 'has no such database: create it, or fix the database name in DATABASE_URL',
};

/** A start-up failure that retrying cannot fix; the message says what to change. */
export function refusalOf(error: unknown, target: string): Error | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !Object.hasOwn(REFUSALS, code)) return undefined;
  return new Error(
    `PostgreSQL at ${target} ${REFUSALS[code]} (SQLSTATE ${code}: ${errorMessage(error)})`,
    { cause: error },
  );
}

/**
 * PostgreSQL may start after us (a database in the same Helm release): retried with backoff
 * until it has not answered for `startupTimeoutMs`. A full server (53300) is waited for as long
 * as it stays full: a replica added under load must not exit because the others hold every
 * connection. A refusal (credentials, no such database) exits at once.
 */
export async function waitForPostgres(
  db: Kysely<Database>,
  options: PostgresOptions,
): Promise<void> {
  let deadline = Date.now() + options.startupTimeoutMs;
  // 250 ms doubling to 5 s; no jitter: one process waits for its own database.
  const backoff = new Backoff({ initialMs: 250, maxMs: 5_000, jitterRatio: 0 });
  for (let attempt = 1; ; attempt++) {
    try {
      await sql`select 1`.execute(db);
      return;
    } catch (error) {
      const refusal = refusalOf(error, options.target);
      if (refusal) throw refusal;
      const reason = errorMessage(error);
      const delay = backoff.next();
      const line = { attempt, target: options.target, reason };
      if ((error as { code?: unknown } | undefined)?.code === '53300') {
        deadline = Date.now() + options.startupTimeoutMs;
        options.logger.warn(line, 'PostgreSQL is full (SQLSTATE 53300), waiting for a connection');
      } else if (Date.now() + delay > deadline) {
        throw new Error(
          `PostgreSQL at ${options.target} did not answer within ${options.startupTimeoutMs / 1000} s (last error: ${reason})`,
          { cause: error },
        );
      } else {
        options.logger.warn(line, 'PostgreSQL not reachable yet, retrying');
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
