import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { type CompiledQuery, type InsertQueryBuilder, type Kysely, sql } from 'kysely';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import type { Database } from '../database/database.types.js';
import { KYSELY } from '../database/database.tokens.js';
import { valuesTable } from '../database/values-table.js';

/** What a notice carries: the upstream document's NewPlant. */
export interface NewPlant {
  id: bigint;
  name: string;
  tag?: string | undefined;
  /** The W3C trace context of the request that created it (tracing on), kept for delivery. */
  traceparent?: string | undefined;
}

/** A pending notice leased to this process for one attempt. */
export interface ClaimedNotice {
  id: bigint;
  eventId: string;
  payload: string;
  attempts: number;
  /** The creating request's traceparent; null when it was not traced. */
  traceContext: string | null;
}

/** A notice's row, with the plant it tells of (kept only if the statement created that). */
type Notice = ReturnType<WebhookOutboxRepository['noticesOf']>[number];
const NOTICE_COLUMNS = [
  'event_id',
  'receiver',
  'payload',
  'state',
  'created_at',
  'next_attempt_at',
  'trace_context',
] as const;

/** The plants feature's INSERT, returning the ids it created. */
export type PlantsInsert = InsertQueryBuilder<Database, 'plants', { id: bigint }>;

/** The PostgreSQL channel a commit that wrote notices signals on (LISTEN/NOTIFY). */
export const OUTBOX_CHANNEL = 'webhook_outbox';

/**
 * The plant webhook's outbox, the table that is the queue: the plants feature adds notices in its
 * own transaction; delivery claims due rows with a lease and records outcomes while it holds it.
 * Leases are the database's clock on PostgreSQL (replicas' clocks may disagree), ours on SQLite.
 */
@Injectable()
export class WebhookOutboxRepository {
  /** Receivers stopped by a 410 (a copy of `webhook_receivers`): no notices are written for them. */
  private stopped = new Set<string>();
  private readonly postgres: boolean;
  private readonly statements = new Map<string, CompiledQuery<{ id: bigint }>>();
  /** Set by delivery in a process that delivers: called once a commit wrote notices. */
  onCommitted: (() => void) | undefined;

  constructor(
    @Inject(KYSELY) private readonly db: Kysely<Database>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.postgres = config.database.kind === 'postgres';
  }

  /** Receivers that get notices now: configured, and not stopped by a 410. */
  receivers(): WebhookReceiver[] {
    return this.config.webhooks.receivers.filter((r) => !this.stopped.has(r.id));
  }

  /** False without receivers: then nothing is written and plants commit as before. */
  get enabled(): boolean {
    return this.receivers().length > 0;
  }

  /** SQLite: one notice per plant and receiver, in the caller's transaction. */
  async addNotices(trx: Kysely<Database>, plants: NewPlant[], now = Date.now()): Promise<void> {
    const rows = this.noticesOf(plants, now).map(({ plant_id: _, ...row }) => row);
    if (rows.length > 0) await trx.insertInto('webhook_outbox').values(rows).execute();
  }

  /**
   * PostgreSQL: the plants' INSERT and their notices as one statement, one round trip (a
   * transaction took five, and 1.4x the API's CPU per plant); a trigger NOTIFYs. Compiled once
   * per shape; the parameters are the INSERT's, then each notice's. Returns the created ids.
   */
  async insertWithNotices(
    insertFor: (count: number) => PlantsInsert,
    insertParameters: readonly unknown[],
    plants: NewPlant[],
  ): Promise<Set<bigint>> {
    const notices = this.noticesOf(plants, Date.now());
    const shape = `${plants.length}x${notices.length}`;
    const query =
      this.statements.get(shape) ?? this.withNotices(insertFor(plants.length), notices).compile();
    this.statements.set(shape, query);
    const parameters = [...insertParameters, ...notices.flatMap((notice) => Object.values(notice))];
    const { rows } = await this.db.executeQuery<{ id: bigint }>({ ...query, parameters });
    return new Set(rows.map((row) => BigInt(row.id)));
  }

  /** `with created as (<insert>), notices as (insert ... join created) select id from created`. */
  private withNotices(insert: PlantsInsert, notices: Notice[]) {
    const casts = { plant_id: 'bigint', created_at: 'bigint', next_attempt_at: 'bigint' } as const;
    const columns = NOTICE_COLUMNS.map((column) => `n.${column}` as const);
    return this.db
      .with('created', () => insert)
      .with('notices', (db) =>
        db
          .insertInto('webhook_outbox')
          .columns(NOTICE_COLUMNS)
          .expression((eb) =>
            eb
              .selectFrom(valuesTable(notices, 'n', casts))
              .innerJoin('created', 'created.id', 'n.plant_id')
              .select(columns),
          ),
      )
      .selectFrom('created')
      .select('id');
  }

  /** `plants`' notices, one per receiver (one event id per plant), in the statement's order. */
  private noticesOf(plants: NewPlant[], now: number) {
    const receivers = this.receivers();
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

  /** Called once a transaction that added notices committed: wakes this process's delivery. */
  committed(): void {
    this.onCommitted?.();
  }

  /** Leases up to `limit` due notices of a receiver, first due first; an expired lease is free. */
  async claim(
    receiver: string,
    limit: number,
    owner: string,
    leaseMs: number,
  ): Promise<ClaimedNotice[]> {
    let due = this.db
      .selectFrom('webhook_outbox')
      .select('id')
      .where('receiver', '=', receiver)
      // A literal, so that both stores' planners may use the index of pending rows.
      .where('state', '=', sql.lit('pending'))
      .where('next_attempt_at', '<=', Date.now())
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', this.now())]))
      // A receiver another process saw answer 410 gets nothing more from this one either.
      .where('receiver', 'not in', (eb) => eb.selectFrom('webhook_receivers').select('receiver'))
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(limit);
    if (this.postgres) due = due.forUpdate().skipLocked();
    const rows = await this.db
      .updateTable('webhook_outbox')
      .set({ lease_until: sql<number>`${this.now()} + ${leaseMs}`, leased_by: owner })
      .where('id', 'in', due)
      .returning(['id', 'event_id as eventId', 'payload', 'attempts'])
      .returning('trace_context as traceContext')
      .execute();
    return rows.map((row) => ({ ...row, attempts: Number(row.attempts) }));
  }

  /** Delivered, due again at `retryAt`, or `failed`: only while `owner` still holds the lease. */
  async record(
    ids: bigint[],
    owner: string,
    outcome: { delivered: true } | { error: string; retryAt: number | undefined },
    now = Date.now(),
  ): Promise<void> {
    const { error = null, retryAt } = 'delivered' in outcome ? {} : outcome;
    await this.db
      .updateTable('webhook_outbox')
      .set({
        state: retryAt !== undefined ? 'pending' : error === null ? 'delivered' : 'failed',
        last_error: error,
        ...(retryAt === undefined ? { finished_at: now } : { next_attempt_at: retryAt }),
        attempts: sql<number>`attempts + 1`,
        lease_until: null,
        leased_by: null,
      })
      .where('id', 'in', ids)
      .where('state', '=', 'pending')
      .where('leased_by', '=', owner)
      .execute();
  }

  /** `owner`'s leases at a clean stop; all at a start on SQLite (one process per store). */
  async releaseLeases(owner: string | undefined): Promise<void> {
    if (owner === undefined && this.postgres) return;
    let update = this.db
      .updateTable('webhook_outbox')
      .set({ lease_until: null, leased_by: null })
      .where('state', '=', 'pending');
    if (owner !== undefined) update = update.where('leased_by', '=', owner);
    await update.execute();
  }

  /** 410 Gone: a durable stop, shared by every process, with the receiver's pending notices. */
  async stopReceiver(receiver: WebhookReceiver, now = Date.now()): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('webhook_receivers')
        .values({ receiver: receiver.id, host: receiver.host, stopped_at: now, reason: '410 Gone' })
        .onConflict((oc) => oc.column('receiver').doNothing())
        .execute();
      await this.closeNoticesOfStopped(trx, now);
    });
    this.stopped.add(receiver.id);
  }

  /** Pending notices of stopped receivers (some commit while a stop is recorded) are closed. */
  async closeNoticesOfStopped(db: Kysely<Database> = this.db, now = Date.now()): Promise<void> {
    await db
      .updateTable('webhook_outbox')
      .set({ state: 'stopped', finished_at: now, lease_until: null, last_error: '410 Gone' })
      .where('state', '=', 'pending')
      .where('receiver', 'in', (eb) => eb.selectFrom('webhook_receivers').select('receiver'))
      .execute();
  }

  /** Re-reads the stops (another process's 410, an operator's DELETE re-enabling one). */
  async loadStopped(): Promise<Set<string>> {
    const rows = await this.db.selectFrom('webhook_receivers').select('receiver').execute();
    this.stopped = new Set(rows.map((row) => row.receiver));
    return this.stopped;
  }

  isStopped(receiver: string): boolean {
    return this.stopped.has(receiver);
  }

  /** A receiver removed from the configuration and added again later starts afresh. */
  async forgetUnconfigured(configured: string[]): Promise<void> {
    let query = this.db.deleteFrom('webhook_receivers');
    if (configured.length > 0) query = query.where('receiver', 'not in', configured);
    await query.execute();
  }

  /** Pending notices of each receiver, and when its oldest was created. */
  async backlog(): Promise<Map<string, { pending: number; oldest: number }>> {
    const rows = await this.db
      .selectFrom('webhook_outbox')
      .select((eb) => [
        'receiver',
        eb.fn.countAll().as('pending'),
        eb.fn.min('created_at').as('oldest'),
      ])
      .where('state', '=', 'pending')
      .groupBy('receiver')
      .execute();
    return new Map(
      rows.map((r) => [r.receiver, { pending: Number(r.pending), oldest: Number(r.oldest) }]),
    );
  }

  /** Deletes a batch of finished (or unconfigured receivers') notices older than `before`. */
  async prune(before: number, configured: string[], limit = 1000): Promise<number> {
    const old = this.db
      .selectFrom('webhook_outbox')
      .select('id')
      .where((eb) =>
        eb.or([
          eb.and([eb('state', '<>', 'pending'), eb('finished_at', '<', before)]),
          eb.and([
            eb('created_at', '<', before),
            ...(configured.length > 0 ? [eb('receiver', 'not in', configured)] : []),
          ]),
        ]),
      )
      .limit(limit);
    const result = await this.db
      .deleteFrom('webhook_outbox')
      .where('id', 'in', old)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Now in epoch ms: the database's clock on PostgreSQL (shared by replicas), ours on SQLite. */
  private now() {
    return this.postgres ? databaseNowMs : sql<number>`${Date.now()}`;
  }
}

/** The NewPlant body (three flat fields; JSON.stringify escapes strings as lossless-json does). */
export function payloadOf(plant: NewPlant): string {
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${
    plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  }}`;
}

/** clock_timestamp(), not now(): the statement's time, not its transaction's start. */
const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;
