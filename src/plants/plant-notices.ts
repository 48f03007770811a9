import { randomBytes } from 'node:crypto';
import { type CompiledQuery, type InsertQueryBuilder, type Kysely, sql } from 'kysely';
import { databaseNowMs } from '../database/database-clock.js';
import type { Database } from '../database/database.types.js';
import type { WebhookOutboxRepository } from '../webhooks/webhook-outbox.repository.js';
import type { Plant } from './plant.js';

/** A created plant a notice tells of, with its request's W3C trace context when traced. */
export type NoticedPlant = Plant & { traceparent?: string | undefined };

/**
 * What an INSERT returns; the tag only makes it two columns: pg spreads a one-column object per
 * row, a shape V8 has no transition left for here (a new hidden class a row; bench/README.md).
 */
export const CREATED_COLUMNS = ['id', 'tag'] as const;

export type PlantsInsert = InsertQueryBuilder<
  Database,
  'plants',
  { id: bigint; tag: string | null }
>;

/** The webhook's notices, written with their plants: a row per plant and receiver (an outbox). */
export class PlantNotices {
  /** The one-statement writes on PostgreSQL, by number of plants. */
  private readonly statements = new Map<number, CompiledQuery<{ id: bigint }>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly outbox: WebhookOutboxRepository,
  ) {}

  /** SQLite: the notices of `plants`, in the caller's transaction. */
  async add(trx: Kysely<Database>, plants: NoticedPlant[], now = Date.now()): Promise<void> {
    const rows = this.rowsOf(plants, now).map(({ plant_id: _, ...row }) => row);
    if (rows.length > 0) await trx.insertInto('webhook_outbox').values(rows).execute();
  }

  /**
   * PostgreSQL: the plants and their notices in one statement, a round trip where a
   * transaction takes five (1.4x the CPU per plant). Notices go as one array per column, so
   * the text is compiled once per plant count; their times are the database's clock.
   */
  async insertWith(
    insertFor: (count: number) => PlantsInsert,
    insertParameters: readonly unknown[],
    plants: NoticedPlant[],
  ): Promise<Set<bigint>> {
    let query = this.statements.get(plants.length);
    if (!query) {
      query = this.statementFor(insertFor(plants.length)).compile();
      this.statements.set(plants.length, query);
    }
    const notices = this.rowsOf(plants, 0);
    const columns = Object.keys(COLUMN_TYPES) as (keyof typeof COLUMN_TYPES)[];
    const parameters = [...insertParameters, ...columns.map((c) => notices.map((n) => n[c]))];
    const { rows } = await this.db.executeQuery<{ id: bigint }>({ ...query, parameters });
    return new Set(rows.map((row) => BigInt(row.id)));
  }

  /** `with created as (<insert>), notices as (insert ... join created) select id, tag`. */
  private statementFor(insert: PlantsInsert) {
    const columns = Object.entries(COLUMN_TYPES);
    const arrays = columns.map(([, type]) => sql`cast(${[]} as ${sql.raw(type)}[])`);
    const names = sql.join(columns.map(([column]) => sql.ref(column)));
    const notices = sql<Notice>`unnest(${sql.join(arrays)})`.as<'n'>(sql`n(${names})`);
    return (
      this.db
        .with('created', () => insert)
        // Read once: clock_timestamp() read twice may fall on two milliseconds.
        .with('clock', (db) => db.selectNoFrom(databaseNowMs.as('ms')))
        .with('notices', (db) =>
          db
            .insertInto('webhook_outbox')
            .columns(NOTICE_COLUMNS)
            .expression((eb) =>
              eb
                .selectFrom(notices)
                .innerJoin('created', 'created.id', 'n.plant_id')
                .innerJoin('clock', (join) => join.onTrue())
                .select(PASSED_COLUMNS.map((column) => `n.${column}` as const))
                .select(['clock.ms as created_at', 'clock.ms as next_attempt_at']),
            ),
        )
        .selectFrom('created')
        .select(CREATED_COLUMNS)
    );
  }

  /** One row per plant and receiver (one event id per plant). */
  private rowsOf(plants: NoticedPlant[], now: number) {
    const receivers = this.outbox.receivers();
    return plants.flatMap((plant) => {
      const event_id = `msg_${randomBytes(16).toString('base64url')}`;
      const payload = payloadOf(plant);
      const trace_context = plant.traceparent ?? null;
      return receivers.map(({ id: receiver }) => ({
        plant_id: plant.id,
        event_id,
        receiver,
        payload,
        state: 'pending' as const,
        created_at: now,
        next_attempt_at: now,
        trace_context,
      }));
    });
  }
}

/** A notice's row, with the plant it tells of (kept only if the statement created that). */
type Notice = ReturnType<PlantNotices['rowsOf']>[number];
/** Each passed column's type for its array; the times come from the database's clock. */
const COLUMN_TYPES: Record<Exclude<keyof Notice, 'created_at' | 'next_attempt_at'>, string> = {
  plant_id: 'bigint',
  event_id: 'text',
  receiver: 'text',
  payload: 'text',
  state: 'text',
  trace_context: 'text',
};
const PASSED_COLUMNS = ['event_id', 'receiver', 'payload', 'state', 'trace_context'] as const;
const NOTICE_COLUMNS = [...PASSED_COLUMNS, 'created_at', 'next_attempt_at'] as const;

/** The NewPlant body (three flat fields; JSON.stringify escapes strings as lossless-json does). */
export function payloadOf(plant: Plant): string {
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${
    plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  }}`;
}
