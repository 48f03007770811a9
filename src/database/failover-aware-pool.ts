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
  constructor(
    private readonly pool: pg.Pool,
    private readonly onAcquireFailure: (reason: AcquireFailure) => void,
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
    return discardingOnFailure(client);
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}

function discardingOnFailure(client: pg.PoolClient): PostgresPoolClient {
  let failure: Error | undefined;
  const query = async <R>(sql: string, parameters: ReadonlyArray<unknown>) => {
    try {
      return (await client.query(
        sql,
        parameters as unknown[],
      )) as unknown as PostgresQueryResult<R>;
    } catch (error) {
      if (isUnavailable(error)) failure = error as Error;
      throw error;
    }
  };
  return {
    query: query as PostgresPoolClient['query'],
    // pg-pool closes a client released with an error rather than keeping it idle.
    release: () => client.release(failure),
  };
}
