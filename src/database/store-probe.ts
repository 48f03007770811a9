import { type Kysely, sql } from 'kysely';
import type { Database } from './database.types.js';

/** The health check's query: resolves when the store would take a write now. */
export type StoreProbe = (db: Kysely<Database>) => Promise<void>;

/** Inside the ping's 750 ms, so a locked table answers "locked" rather than a plain timeout. */
export const WRITE_LOCK_WAIT_MS = 500;

/** SQLSTATE 55P03: lock_timeout expired. */
const LOCK_NOT_AVAILABLE = '55P03';
/** SQLSTATE 25006: the server takes no writes (a standby, or default_transaction_read_only). */
const READ_ONLY = '25006';

/** The embedded store: one process owns the file, so `select 1` answering is enough. */
export const sqliteProbe: StoreProbe = async (db) => {
  await sql`select 1`.execute(db);
};

/**
 * Takes and gives back the ROW EXCLUSIVE lock every plant write takes: a LOCK TABLE (or an
 * ALTER queued behind a reader) stalls writes while `select 1` still answers. It writes
 * nothing and waits on no writer. It also asks whether the transaction could write: after a
 * failover the primary's address may reach a server in recovery.
 */
export const postgresProbe: StoreProbe = async (db) => {
  try {
    await db.transaction().execute(async (trx) => {
      await sql.raw(`set local lock_timeout = ${WRITE_LOCK_WAIT_MS}`).execute(trx);
      await sql`lock table plants, webhook_outbox in row exclusive mode`.execute(trx);
      const { rows } = await sql<{
        transaction_read_only: string;
      }>`show transaction_read_only`.execute(trx);
      if (rows[0]?.transaction_read_only === 'on') throw readOnlyServer();
    });
  } catch (error) {
    if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
    throw new Error(
      `PostgreSQL: writes cannot commit: another session has held a lock on plants or webhook_outbox for over ${WRITE_LOCK_WAIT_MS} ms`,
      { cause: error },
    );
  }
};

/** Coded as the server's own 25006, so the pool drops the connection as it would for a write. */
function readOnlyServer(): Error {
  const message = 'PostgreSQL: the server is read-only (in recovery, or not the primary)';
  return Object.assign(new Error(message), { code: READ_ONLY });
}
