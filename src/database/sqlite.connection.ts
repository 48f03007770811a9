import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database } from './database.types.js';
import { StatementCachingDatabase } from './statement-cache.js';

export class DataDirInUseError extends Error {}

/**
 * The embedded store. Durability: WAL journal with synchronous=FULL, so every commit is
 * fsynced to the WAL before the API answers: an acknowledged plant survives `kill -9` and a
 * power cut. (synchronous=NORMAL would survive only the first.)
 *
 * One writer: locking_mode=EXCLUSIVE makes this process hold the file's lock for its whole
 * life, so a second process on the same DATA_DIR fails at start with a clear message instead
 * of interleaving writes. The OS releases the lock when the process dies, even on `kill -9`.
 */
export function openSqlite(file: string): Kysely<Database> {
  mkdirSync(dirname(file), { recursive: true });
  const database = new BetterSqlite3(file);
  // int64 ids come back as bigint, never rounded to a JS number.
  database.defaultSafeIntegers(true);
  // exec, not pragma(): pragma() makes a throwaway Statement (see statement-cache.ts).
  database.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA busy_timeout = 0;');
  try {
    database.exec('PRAGMA journal_mode = WAL;');
    // Take the exclusive lock now rather than at the first request.
    database.exec('BEGIN IMMEDIATE; COMMIT;');
  } catch (error) {
    database.close();
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
      throw new DataDirInUseError(
        `${file} is in use by another Plant Store process; the embedded store allows one process per DATA_DIR (use DATABASE_URL for several replicas)`,
      );
    }
    throw error;
  }
  database.exec('PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;');
  return new Kysely<Database>({
    dialect: new SqliteDialect({ database: new StatementCachingDatabase(database) }),
  });
}
