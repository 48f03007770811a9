import type { Kysely, Migration } from 'kysely';

/**
 * The W3C trace context (traceparent) of the request that created a webhook notice, so each
 * delivery attempt continues that request's trace. Null when tracing was off.
 */
export const addOutboxTraceContext: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('webhook_outbox').addColumn('trace_context', 'text').execute();
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('webhook_outbox').dropColumn('trace_context').execute();
  },
};
