import { type Kysely, sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL, postgresAvailable } from '../../test/support/postgres.js';
import type { Database } from './database.types.js';
import pg from 'pg';
import { type AcquireFailure, FailoverAwarePool } from './failover-aware-pool.js';
import { openPostgres } from './postgres.connection.js';

const logger = pino({ level: 'silent' });
const onePool = { max: 1, idleTimeoutMs: 10_000, maxLifetimeMs: 60_000 };
const backendPid = async (db: Kysely<Database>) =>
  (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid;

describe.skipIf(!postgresAvailable)('the PostgreSQL pool', () => {
  let db: Kysely<Database> | undefined;
  afterEach(() => db?.destroy());

  it('closes a connection that met a read-only server (25006) instead of reusing it', async () => {
    db = openPostgres({ url: TEST_DATABASE_URL, logger, pool: onePool });
    const before = await backendPid(db);
    expect(await backendPid(db)).toBe(before); // one connection, reused
    const write = db.transaction().execute(async (trx) => {
      await sql`set transaction read only`.execute(trx);
      await sql`create temporary table t (x int)`.execute(trx);
    });
    await expect(write).rejects.toMatchObject({ code: '25006' });
    expect(await backendPid(db)).not.toBe(before);
  });

  it('hands out one wrapper per connection, so Kysely keeps one connection object for it', async () => {
    const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 1 });
    const failoverAware = new FailoverAwarePool(pool, () => {});
    const first = await failoverAware.connect();
    first.release();
    const second = await failoverAware.connect();
    second.release();
    expect(second).toBe(first);
    await failoverAware.end();
  });

  it('fails a query left unanswered with a read timeout and drops its connection', async () => {
    db = openPostgres({ url: TEST_DATABASE_URL, logger, pool: onePool, readTimeoutMs: 200 });
    const before = await backendPid(db);
    await expect(sql`select pg_sleep(1)`.execute(db)).rejects.toThrow('Query read timeout');
    expect(await backendPid(db)).not.toBe(before);
  });

  it('keeps a connection after an ordinary query error', async () => {
    db = openPostgres({ url: TEST_DATABASE_URL, logger, pool: onePool });
    const before = await backendPid(db);
    await expect(sql`select 1/0`.execute(db)).rejects.toMatchObject({ code: '22012' });
    expect(await backendPid(db)).toBe(before);
  });

  it('counts a request refused a connection because the pool was full', async () => {
    const failures: AcquireFailure[] = [];
    const onAcquireFailure = (reason: AcquireFailure) => failures.push(reason);
    db = openPostgres({ url: TEST_DATABASE_URL, logger, pool: onePool, onAcquireFailure });
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let holding = () => {};
    const held = new Promise<void>((resolve) => (holding = resolve));
    // The pool's one connection stays taken until the second request has been refused.
    const holder = db.connection().execute(async () => {
      holding();
      await gate;
    });
    await held;
    await expect(sql`select 1`.execute(db)).rejects.toThrow(/timeout/);
    release();
    await holder;
    expect(failures).toEqual(['pool_full']);
  });
});
