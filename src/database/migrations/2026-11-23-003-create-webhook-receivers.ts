import type { Kysely, Migration } from 'kysely';

/**
 * The plant webhook receivers' durable state: one row per receiver that answered 410 Gone, so
 * the stop outlives a restart and holds on every replica. Keyed by the receiver's id (a digest
 * of its URL, as in webhook_outbox): a changed URL is a new receiver. `host` is there so an
 * operator can find the row (`DELETE FROM webhook_receivers WHERE host = '...'` re-enables it);
 * neither the URL (it may carry credentials) nor the secret is stored.
 */
export const createWebhookReceivers: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('webhook_receivers')
      .addColumn('receiver', 'text', (col) => col.primaryKey())
      .addColumn('host', 'text', (col) => col.notNull())
      .addColumn('stopped_at', 'bigint', (col) => col.notNull())
      .addColumn('reason', 'text', (col) => col.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('webhook_receivers').execute();
  },
};
