import type { Database as BetterSqlite3Database, Statement } from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Each distinct SQL text prepared once and kept (Kysely prepares per query). Required on
 * Node 24.19+, where a garbage better-sqlite3 Statement collected by a background GC aborts
 * the process (nodejs/node#65446); it also saves a prepare per request. The texts are finite
 * (at most MAX_BATCH insert shapes), so there is no eviction, and must be none.
 */
export class StatementCachingDatabase implements SqliteDatabase {
  readonly #statements = new Map<string, Statement>();

  constructor(
    private readonly database: BetterSqlite3Database,
    /** Runs after the database is closed (Kysely's destroy). */
    readonly afterClose: () => void = () => {},
  ) {}

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
    this.afterClose();
  }
}
