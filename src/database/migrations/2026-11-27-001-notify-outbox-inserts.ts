import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/**
 * PostgreSQL: a statement that adds notices NOTIFYs delivery when it commits, so a plant and
 * its notices stay one statement. SQLite has one process per store: nothing to signal.
 */
export const notifyOutboxInserts: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    if (db.getExecutor().adapter instanceof SqliteAdapter) return;
    await sql`create function webhook_outbox_notify() returns trigger language plpgsql as $$
      begin perform pg_notify('webhook_outbox', ''); return null; end $$`.execute(db);
    await sql`create trigger webhook_outbox_notify after insert on webhook_outbox
      for each statement execute function webhook_outbox_notify()`.execute(db);
  },
};
