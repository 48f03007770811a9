import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/** The plant webhook's outbox: a row per plant and receiver, written in the plant's commit. */
export const createWebhookOutbox: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
    await db.schema
      .createTable('webhook_outbox')
      .addColumn('id', sqlite ? sql`integer` : sql`bigserial`, (col) =>
        sqlite ? col.primaryKey().autoIncrement() : col.primaryKey(),
      )
      .addColumn('event_id', 'text', (col) => col.notNull())
      .addColumn('receiver', 'text', (col) => col.notNull())
      .addColumn('payload', 'text', (col) => col.notNull())
      .addColumn('state', 'text', (col) => col.notNull().defaultTo('pending'))
      .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
      .addColumn('lease_until', 'bigint')
      .addColumn('leased_by', 'text')
      .addColumn('last_error', 'text')
      .addColumn('finished_at', 'bigint')
      .execute();
    // What the dispatcher claims: due pending rows of one receiver, oldest first.
    await db.schema
      .createIndex('webhook_outbox_due')
      .on('webhook_outbox')
      .columns(['receiver', 'state', 'next_attempt_at'])
      .execute();
  },
};
