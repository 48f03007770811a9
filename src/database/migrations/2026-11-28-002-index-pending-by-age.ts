import { type Kysely, type Migration, sql } from 'kysely';

/** The backlog's oldest pending notice, read every 5 s, without reading every pending row. */
export const indexPendingByAge: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('webhook_outbox_pending_age')
      .on('webhook_outbox')
      .columns(['receiver', 'created_at'])
      .where(sql.ref('state'), '=', sql.lit('pending'))
      .execute();
  },
};
