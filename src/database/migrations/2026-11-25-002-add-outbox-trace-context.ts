import type { Kysely, Migration } from 'kysely';

/** The creating request's traceparent, so each delivery attempt continues that trace. */
export const addOutboxTraceContext: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('webhook_outbox').addColumn('trace_context', 'text').execute();
  },
};
