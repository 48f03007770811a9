import type { Database as BetterSqlite3Database, Statement } from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Kysely's SQLite driver prepares a new statement for every query. Here each distinct SQL text
 * is prepared once and kept for the life of the database:
 *
 * - it is required on Node.js 24.19+: better-sqlite3 12 (the last line that supports Node 20)
 *   wraps statements in node::ObjectWrap, whose destructor aborts the process when a garbage
 *   Statement is collected by a background GC (nodejs/node#65446, WiseLibs/better-sqlite3#1515).
 *   A statement that is never garbage is never collected;
 * - it saves a prepare per request.
 *
 * The set of SQL texts is finite by construction (a grouped insert has at most MAX_BATCH rows,
 * so at most that many shapes), so the cache needs no eviction, and must have none.
 */
export class StatementCachingDatabase implements SqliteDatabase {
  readonly #statements = new Map<string, Statement>();

  constructor(private readonly database: BetterSqlite3Database) {}

  prepare(sql: string): SqliteStatement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.database.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  close(): void {
    this.database.close();
  }
}
