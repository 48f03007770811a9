import type { ColumnType, Generated } from 'kysely';

/** The schema both dialects share; ids are 64-bit in the database and `bigint` in TypeScript. */
export interface PlantsTable {
  id: ColumnType<bigint, bigint, never>;
  name: string;
  tag: string | null;
}

/** The plant webhook's outbox (src/webhooks). Integers may read back as bigint: use Number(). */
export interface WebhookOutboxTable {
  id: Generated<bigint>;
  event_id: string;
  receiver: string;
  payload: string;
  state: 'pending' | 'delivered' | 'failed' | 'stopped';
  attempts: ColumnType<number | bigint, number | undefined, number>;
  created_at: ColumnType<number | bigint, number, number>;
  next_attempt_at: ColumnType<number | bigint, number, number>;
  lease_until: ColumnType<number | bigint | null, number | null | undefined, number | null>;
  leased_by: string | null;
  last_error: string | null;
  finished_at: ColumnType<number | bigint | null, number | null | undefined, number | null>;
  /** The W3C traceparent of the request that created the notice, when it was traced. */
  trace_context: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface Database {
  plants: PlantsTable;
  webhook_outbox: WebhookOutboxTable;
  /** Receivers stopped by a 410 Gone (src/webhooks): a row per stopped receiver. */
  webhook_receivers: {
    receiver: string;
    host: string;
    stopped_at: ColumnType<number | bigint, number, number>;
    reason: string;
  };
  /** Settings of the plant webhook made by the store itself (the receiver ids' key). */
  webhook_settings: { name: string; value: string };
}
