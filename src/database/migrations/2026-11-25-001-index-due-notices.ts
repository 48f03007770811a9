import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Only pending rows are indexed for the claim: over every row, each claim walked past the
 * delivered ones, and delivery fell behind the rate plants were created.
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
};
