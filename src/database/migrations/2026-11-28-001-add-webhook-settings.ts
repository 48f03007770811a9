import { randomBytes } from 'node:crypto';
import type { Kysely, Migration } from 'kysely';

/** A random key per store for the receiver ids: the same everywhere, telling nothing of URLs. */
export const addWebhookSettings: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('webhook_settings')
      .addColumn('name', 'text', (col) => col.primaryKey())
      .addColumn('value', 'text', (col) => col.notNull())
      .execute();
    await (db as Kysely<{ webhook_settings: { name: string; value: string } }>)
      .insertInto('webhook_settings')
      .values({ name: 'receiver_id_key', value: randomBytes(32).toString('hex') })
      .execute();
  },
};
