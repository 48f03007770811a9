import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Delivery claims a receiver's due notices in due order. Only pending rows are indexed: with the
 * delivered rows kept until they are pruned, an index over every row made each claim walk past
 * them all, and a growing table slowed delivery below the rate plants were created.
 */
export const indexDueNotices: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('webhook_outbox_pending')
      .on('webhook_outbox')
      .columns(['receiver', 'next_attempt_at', 'id'])
      .where(sql.ref('state'), '=', sql.lit('pending'))
      .execute();
    await db.schema.dropIndex('webhook_outbox_due').execute();
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('webhook_outbox_due')
      .on('webhook_outbox')
      .columns(['receiver', 'state', 'next_attempt_at'])
      .execute();
    await db.schema.dropIndex('webhook_outbox_pending').execute();
  },
};
