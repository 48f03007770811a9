import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

export const createPlants: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    // On SQLite only the exact type INTEGER makes the key the rowid (no index to write).
    const idType = db.getExecutor().adapter instanceof SqliteAdapter ? sql`integer` : sql`bigint`;
    await db.schema
      .createTable('plants')
      .addColumn('id', idType, (col) => col.primaryKey().notNull())
      .addColumn('name', 'text', (col) => col.notNull())
      .addColumn('tag', 'text')
      .execute();
  },
};
