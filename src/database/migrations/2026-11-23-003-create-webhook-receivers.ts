import type { Kysely, Migration } from 'kysely';

/**
 * Receivers stopped by a 410 Gone, so the stop outlives restarts and holds on every replica.
 * `host` lets an operator find the row to re-enable it; no URL or secret is stored.
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
};
