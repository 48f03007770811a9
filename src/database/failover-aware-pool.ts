import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { isUnavailable } from './database-unavailable.error.js';

/** Why a connection could not be had: every connection busy, or the server did not answer. */
export type AcquireFailure = 'pool_full' | 'connect_failed';

/**
 * node-postgres's pool for Kysely, except that a connection whose query failed as unavailable
 * (a read-only server after a failover, a dropped socket) is closed on release, not reused:
 * without `target_session_attrs`, that is how the pool leaves a server in recovery.
 */
export class FailoverAwarePool implements PostgresPool {
  /**
   * One wrapper per pg client, kept: Kysely keys its connection objects by the client it is
   * given, so a new wrapper per checkout made it build a new connection for every query.
   */
  private readonly wrappers = new WeakMap<pg.PoolClient, DiscardingOnFailure>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly onAcquireFailure: (reason: AcquireFailure) => void,
    /** How long a query may go unanswered before it fails (`Query read timeout`). */
    private readonly readTimeoutMs = 10_000,
  ) {}

  async connect(): Promise<PostgresPoolClient> {
    const full = this.pool.totalCount >= this.pool.options.max;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.onAcquireFailure(full ? 'pool_full' : 'connect_failed');
      throw error;
    }
    let wrapper = this.wrappers.get(client);
    if (!wrapper) {
      wrapper = new DiscardingOnFailure(client, this.readTimeoutMs);
      this.wrappers.set(client, wrapper);
    }
    return wrapper as unknown as PostgresPoolClient;
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}

/** A checked-out client that remembers an unavailable failure until it is released. */
class DiscardingOnFailure {
  private failure: Error | undefined;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly readTimeoutMs: number,
  ) {}

  async query<R>(sql: string, parameters: ReadonlyArray<unknown>) {
    try {
      return (await this.send(sql, parameters)) as unknown as PostgresQueryResult<R>;
    } catch (error) {
      if (isUnavailable(error)) this.failure = error as Error;
      throw error;
    }
  }

  /**
   * pg's callback form, timed here: its `query_timeout` and promise form wrap the query's
   * callback, which until V8 optimizes pg keeps each query past scavenges (bench/README.md).
   */
  private send(sql: string, parameters: ReadonlyArray<unknown>): Promise<pg.QueryResult> {
    return new Promise((resolve, reject) => {
      // A server that stops answering without closing the socket must not hang requests; the
      // failure discards the connection on release (no pipeline mode: one query at a time).
      const timer = setTimeout(() => reject(new Error('Query read timeout')), this.readTimeoutMs);
      // Not (sql, values): pg makes a string into `{ text }` and adds `values`, a shape V8 has no
      // transition left for here (a new hidden class a query); a config pg copies instead.
      const config = { text: sql, values: parameters as unknown[] };
      try {
        this.client.query(config, (error, result) => {
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(result);
        });
      } catch (error) {
        // Thrown in the executor, it rejects the promise.
        clearTimeout(timer);
        throw error;
      }
    });
  }

  /** pg-pool closes a client released with an error rather than keeping it idle. */
  release(): void {
    const failure = this.failure;
    this.failure = undefined;
    this.client.release(failure);
  }
}
