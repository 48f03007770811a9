import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { isCorruption } from './database-unavailable.error.js';
import type { Database } from './database.types.js';
import { SqliteFileIdentity } from './sqlite-file-identity.js';
import { StatementCachingDatabase } from './statement-cache.js';
import { parseWalHeader, readWalHeaderBytes } from './wal-header.js';

/** The store cannot be opened; the message names the cause, DATA_DIR and the file. */
export class SqliteOpenError extends Error {}

export type OpenedSqlite = ReturnType<typeof openSqlite>;

/**
 * The embedded store: WAL with synchronous=FULL, so an acknowledged plant survives `kill -9`
 * and a power cut; locking_mode=EXCLUSIVE, so a second process on the same DATA_DIR fails at
 * start; `PRAGMA quick_check` at start (about 100 ms per 38 MiB cached, 700 ms from disk), so
 * a damaged file stops the start rather than answering 404 for rows that exist.
 */
export function openSqlite(file: string, dataDir: string) {
  let database: BetterSqlite3.Database;
  try {
    mkdirSync(dirname(file), { recursive: true });
    checkWalHeader(file);
    database = new BetterSqlite3(file);
  } catch (error) {
    if (error instanceof SqliteOpenError) throw error;
    if ((error as { code?: string }).code === 'ERR_DLOPEN_FAILED') throw addonMismatch(error);
    throw notUsable(file, dataDir, error);
  }
  // int64 ids come back as bigint, never rounded to a JS number.
  database.defaultSafeIntegers(true);
  // Closed by Kysely's destroy, which can only come after `identity` below is set.
  const cached = new StatementCachingDatabase(database, () => identity.close());
  try {
    // exec, not pragma(): pragma() makes a throwaway Statement (see statement-cache.ts).
    database.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA busy_timeout = 0;');
    database.exec('PRAGMA journal_mode = WAL;');
    // Take the exclusive lock now rather than at the first request.
    database.exec('BEGIN IMMEDIATE; COMMIT;');
    database.exec('PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;');
    checkIntegrity(cached, file);
  } catch (error) {
    database.close();
    const code = (error as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY')) {
      throw new SqliteOpenError(
        `${file} is in use by another Plant Store process; the embedded store allows one process per DATA_DIR (use DATABASE_URL for several replicas)`,
      );
    }
    if (isCorruption(error)) throw corrupt(file, `${code}: ${(error as Error).message}`);
    if (/^SQLITE_(CANTOPEN|READONLY|IOERR|PERM|AUTH)/.test(code))
      throw notUsable(file, dataDir, error);
    throw error;
  }
  const identity = new SqliteFileIdentity(file);
  return {
    db: new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) }),
    identity,
  };
}

/**
 * SQLite opens a WAL whose header does not verify as empty, losing its commits silently; such
 * a WAL is refused (SQLite writes the header before the frames, so it never leaves one).
 */
function checkWalHeader(file: string): void {
  const wal = `${file}-wal`;
  const size = statSync(wal, { throwIfNoEntry: false })?.size ?? 0;
  if (size === 0 || parseWalHeader(readWalHeaderBytes(wal))) return;
  throw new SqliteOpenError(
    `the WAL file ${wal} is damaged (its header does not verify; ${size} bytes of commits would be lost); the service will not start on it: restore the store from a backup, or move the WAL away to start from ${file} alone`,
  );
}

/** quick_check: every page and record well formed (integrity_check also cross-checks indexes). */
function checkIntegrity(database: StatementCachingDatabase, file: string): void {
  // Through the statement cache: a Statement must never become garbage (see statement-cache.ts).
  const rows = database.prepare('PRAGMA quick_check(5)').all([]) as { quick_check: string }[];
  const findings = rows.map((row) => row.quick_check);
  if (findings.length !== 1 || findings[0] !== 'ok') throw corrupt(file, findings.join('; '));
}

function corrupt(file: string, detail: string): SqliteOpenError {
  return new SqliteOpenError(
    `the database file ${file} is corrupt (${detail}); the service will not start on it: restore it from a backup, or move it away to start an empty store`,
  );
}

/** The addon loads at the first open: one built by `npm ci` under another Node cannot. */
function addonMismatch(error: unknown): SqliteOpenError {
  const reason = (error as Error).message.replaceAll('\n', ' ');
  return new SqliteOpenError(
    `cannot load the SQLite driver (better-sqlite3) on Node.js ${process.version}: it was built for another Node.js version or platform; run \`npm rebuild better-sqlite3\` (or \`npm ci\`) with this Node.js (${reason})`,
    { cause: error },
  );
}

function notUsable(file: string, dataDir: string, error: unknown): SqliteOpenError {
  const code = (error as { code?: string }).code;
  const reason = error instanceof Error ? error.message : String(error);
  const uid = process.getuid?.();
  return new SqliteOpenError(
    `cannot open the embedded store ${file}: DATA_DIR (${dataDir}) must be a directory this process can write${uid === undefined ? '' : ` (uid ${uid})`} (${code ? `${code}: ` : ''}${reason})`,
    { cause: error },
  );
}
