import type { Kysely, Migration } from 'kysely';

export const createPlants: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('plants')
      // bigint is INTEGER on SQLite (the 64-bit rowid) and BIGINT on PostgreSQL.
      .addColumn('id', 'bigint', (col) => col.primaryKey().notNull())
      .addColumn('name', 'text', (col) => col.notNull())
      .addColumn('tag', 'text')
      .execute();
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('plants').execute();
  },
};
