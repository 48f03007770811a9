import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

export const createPlants: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    // On SQLite only the exact type name INTEGER makes the primary key the table's rowid: the
    // row is stored in id order with no separate index to write (64-bit, like the rowid).
    // PostgreSQL's BIGINT is the same 64-bit range.
    const idType = db.getExecutor().adapter instanceof SqliteAdapter ? sql`integer` : sql`bigint`;
    await db.schema
      .createTable('plants')
      .addColumn('id', idType, (col) => col.primaryKey().notNull())
      .addColumn('name', 'text', (col) => col.notNull())
      .addColumn('tag', 'text')
      .execute();
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('plants').execute();
  },
};
