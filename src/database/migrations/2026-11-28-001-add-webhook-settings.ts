import { randomBytes } from 'node:crypto';
import type { Kysely, Migration } from 'kysely';

/**
 * A random key, made once per store, that receiver ids are keyed with
 * (src/database/receiver-ids.ts): the same on every replica and across restarts, and an id
 * says nothing about its URL to whoever does not hold the database.
 */
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
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('webhook_settings').execute();
  },
};
