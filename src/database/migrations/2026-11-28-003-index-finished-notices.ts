import { type Kysely, type Migration, sql } from 'kysely';

/** The prune reads finished notices by age as a range, not the whole outbox. */
export const indexFinishedNotices: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('webhook_outbox_finished')
      .on('webhook_outbox')
      .column('finished_at')
      .where(sql.ref('state'), '<>', sql.lit('pending'))
      .execute();
  },
};
