import { type Kysely, type Migration, sql } from 'kysely';

/**
 * The daily prune deletes finished notices by age: this index of finished rows by
 * `finished_at` makes it a range read, where it walked the whole outbox (a week of rows).
 */
export const indexFinishedNotices: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('webhook_outbox_finished')
      .on('webhook_outbox')
      .column('finished_at')
      .where(sql.ref('state'), '<>', sql.lit('pending'))
      .execute();
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('webhook_outbox_finished').execute();
  },
};
