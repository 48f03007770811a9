import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { type CompiledQuery, type Kysely, sql } from 'kysely';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { Database } from '../database/database.types.js';
import { KYSELY } from '../database/database.tokens.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';

/** A notice the dispatcher holds a lease on. */
export interface ClaimedNotice {
  id: bigint;
  eventId: string;
  payload: string;
  attempts: number;
  createdAt: number;
}

/** A notice just committed with its plant, handed to the dispatcher without a read. */
export interface CommittedNotice extends ClaimedNotice {
  receiver: string;
}

/**
 * Who takes the notices this process commits. On PostgreSQL its lease is written in the
 * INSERT itself, so other replicas leave the rows alone and no claim UPDATE is needed.
 */
export interface NoticeTaker {
  owner: string;
  leaseMs: number;
  take: (notices: CommittedNotice[]) => void;
}

/**
 * What a notice carries: the upstream document's NewPlant. The plants feature hands its plants
 * in (it writes the outbox); the webhook needs no more of them than this.
 */
export interface NewPlant {
  id: bigint;
  name: string;
  tag?: string | undefined;
}

/**
 * The only place with SQL for the plant webhook's outbox. Rows are written by the plants
 * repository inside the transaction that inserts the plants (`insertEvents` takes that
 * transaction), so a committed plant always has its notices and a rolled-back one never has.
 *
 * The notices a commit wrote are handed to the dispatcher in memory (`committed`); on
 * PostgreSQL they carry the inserting replica's lease from the INSERT on. Everything else is
 * claimed with a lease (`lease_until`, `leased_by`): on PostgreSQL with `FOR UPDATE SKIP
 * LOCKED`, so replicas never claim the same row at once, and a replica that dies mid-delivery
 * leaves a lease that runs out, after which another replica takes the row.
 */
@Injectable()
export class WebhookOutboxRepository {
  /**
   * Ids of receivers that answered 410 Gone: no notices are written for them. A copy of the
   * `webhook_receivers` table (the durable truth, shared by replicas), reloaded by
   * `loadStopped`.
   */
  private stopped = new Set<string>();
  private taker: NoticeTaker | undefined;
  private readonly postgres: boolean;
  /**
   * The outbox INSERT compiled once per row count and shape (with or without the lease), as
   * the plants repository does its own: building and compiling it per commit cost more than
   * running it, on the API's event loop.
   */
  private readonly insertQueries = new Map<string, CompiledQuery<InsertedRow>>();

  constructor(
    @Inject(KYSELY) private readonly db: Kysely<Database>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.postgres = config.database.kind === 'postgres';
  }

  receivers(): WebhookReceiver[] {
    return this.config.webhooks.receivers.filter((r) => !this.stopped.has(r.id));
  }

  /** False without receivers: then nothing is stored and plants commit as before. */
  get enabled(): boolean {
    return this.receivers().length > 0;
  }

  /**
   * One notice per plant and receiver; one event id per plant, the same for every receiver.
   * Returns them with their row ids, for `committed` once the transaction has committed.
   */
  async insertEvents(
    trx: Kysely<Database>,
    plants: NewPlant[],
    now = Date.now(),
  ): Promise<CommittedNotice[]> {
    const receivers = this.receivers();
    if (plants.length === 0 || receivers.length === 0) return [];
    const leased = this.postgres && this.taker !== undefined;
    const owner = leased ? this.taker!.owner : null;
    // One random draw for the batch; the payload written directly (a plant is three flat
    // fields, and JSON.stringify escapes a string as lossless-json does): both ran per plant
    // on the API's event loop.
    const random = randomBytes(16 * plants.length);
    const parameters: unknown[] = [];
    const payloads = new Map<string, string>();
    for (const [index, plant] of plants.entries()) {
      const eventId = `msg_${random.subarray(16 * index, 16 * index + 16).toString('base64url')}`;
      const payload = payloadOf(plant);
      payloads.set(eventId, payload);
      for (const receiver of receivers) {
        parameters.push(eventId, receiver.id, payload, now, now);
        if (leased) parameters.push(owner);
      }
    }
    const query = this.insertQueryFor(
      plants.length * receivers.length,
      leased ? this.taker!.leaseMs : undefined,
    );
    const { rows: written } = await trx.executeQuery<InsertedRow>({ ...query, parameters });
    // Matched by (event, receiver), not by position: RETURNING's order is not promised.
    return written.map((row) => ({
      id: BigInt(row.id),
      eventId: row.event_id,
      receiver: row.receiver,
      payload: payloads.get(row.event_id)!,
      attempts: 0,
      createdAt: now,
    }));
  }

  /** PostgreSQL writes the plants and their notices in one statement (`insertWithPlants`). */
  get writesWithPlants(): boolean {
    return this.postgres && this.enabled;
  }

  /**
   * PostgreSQL: the plants' INSERT (`plantsQuery`, `... RETURNING id`) and their notices in one
   * statement, a data-modifying CTE: the notices are joined to the plants it created, so a
   * duplicate gets none, and both commit together without BEGIN and COMMIT (one round trip
   * where a transaction took four, on the API's event loop). Returns the ids of the plants
   * created and the notices, for `committed`.
   */
  async insertWithPlants(
    plantsQuery: CompiledQuery<{ id: bigint }>,
    plants: NewPlant[],
    now = Date.now(),
  ): Promise<{ created: Set<bigint>; notices: CommittedNotice[] }> {
    const receivers = this.receivers();
    if (plants.length === 0 || receivers.length === 0) {
      // `from (values )` is no statement. The last receiver may have answered 410 since the
      // caller asked `writesWithPlants`: the plants are still written, without notices.
      const { rows } = await this.db.executeQuery(plantsQuery);
      return { created: new Set(rows.map((row) => BigInt(row.id))), notices: [] };
    }
    const lease = this.taker
      ? { ms: this.taker.leaseMs, owner: this.taker.owner }
      : { ms: null, owner: null };
    const random = randomBytes(16 * plants.length);
    const parameters = [...plantsQuery.parameters];
    const values: string[] = [];
    const byEvent = new Map<string, { plant: bigint; payload: string }>();
    for (const [index, plant] of plants.entries()) {
      const eventId = `msg_${random.subarray(16 * index, 16 * index + 16).toString('base64url')}`;
      const payload = payloadOf(plant);
      byEvent.set(eventId, { plant: plant.id, payload });
      for (const receiver of receivers) {
        const at = parameters.length;
        parameters.push(plant.id, eventId, receiver.id, payload);
        values.push(`($${at + 1}::bigint, $${at + 2}, $${at + 3}, $${at + 4})`);
      }
    }
    const at = parameters.length;
    parameters.push(now, lease.ms, lease.owner);
    const statement = `with created as (${plantsQuery.sql})
      insert into "webhook_outbox" ("event_id", "receiver", "payload", "state", "created_at",
        "next_attempt_at", "lease_until", "leased_by")
      select v.event_id, v.receiver, v.payload, 'pending', $${at + 1}::bigint, $${at + 1}::bigint,
        ${DATABASE_NOW_MS} + $${at + 2}::bigint, $${at + 3}::text
      from (values ${values.join(', ')}) as v (plant_id, event_id, receiver, payload)
      join created on created.id = v.plant_id
      returning "id", "event_id", "receiver"`;
    const { rows } = await this.db.executeQuery<InsertedRow>({
      ...plantsQuery,
      sql: statement,
      parameters,
    });
    const created = new Set<bigint>();
    const notices = rows.map((row) => {
      const event = byEvent.get(row.event_id)!;
      created.add(event.plant);
      return {
        id: BigInt(row.id),
        eventId: row.event_id,
        receiver: row.receiver,
        payload: event.payload,
        attempts: 0,
        createdAt: now,
      };
    });
    return { created, notices };
  }

  /** The INSERT of `count` pending rows, with a lease of `leaseMs` (database clock) or without. */
  private insertQueryFor(count: number, leaseMs: number | undefined): CompiledQuery<InsertedRow> {
    const key = `${count}l${leaseMs ?? ''}`;
    let query = this.insertQueries.get(key);
    if (!query) {
      const row = {
        event_id: '',
        receiver: '',
        payload: '',
        state: sql<'pending'>`'pending'`,
        created_at: 0,
        next_attempt_at: 0,
        ...(leaseMs !== undefined && { lease_until: leaseEnd(leaseMs), leased_by: '' }),
      };
      query = this.db
        .insertInto('webhook_outbox')
        .values(Array.from({ length: count }, () => row))
        .returning(['id', 'event_id', 'receiver'])
        .compile();
      this.insertQueries.set(key, query);
    }
    return query;
  }

  /**
   * Called once the transaction that wrote `notices` committed (never for one rolled back):
   * hands them to the dispatcher, which sends them without reading them back.
   */
  committed(notices: CommittedNotice[]): void {
    if (notices.length > 0) this.taker?.take(notices);
  }

  /** The dispatcher takes every notice this process commits from now on. */
  onCommitted(taker: NoticeTaker): () => void {
    this.taker = taker;
    return () => {
      if (this.taker === taker) this.taker = undefined;
    };
  }

  /** PostgreSQL: notices carry leases (SQLite has one process per store and needs none). */
  get leased(): boolean {
    return this.postgres;
  }

  /**
   * PostgreSQL: extends this process's leases on `ids` to `leaseMs` from now by the database's
   * clock; returns the ids it still held (a row another replica took over after the lease ran
   * out, or one finished, is not renewed). The commit is not waited for, like the claim's.
   */
  async renewLeases(ids: bigint[], owner: string, leaseMs: number): Promise<Set<bigint>> {
    if (!this.postgres || ids.length === 0) return new Set(ids);
    const rows = await this.db
      .updateTable('webhook_outbox')
      .set({ lease_until: leaseEnd(leaseMs) })
      .where('id', 'in', ids)
      .where('leased_by', '=', owner)
      .where('state', '=', 'pending')
      .where(asynchronousCommit)
      .returning('id')
      .execute();
    return new Set(rows.map((row) => BigInt(row.id)));
  }

  /**
   * Leases up to `limit` due notices of one receiver, oldest first; with `afterId`, only those
   * after it (the dispatcher pages through a backlog rather than reading its front again).
   * PostgreSQL: with `ownLeases` (the default), rows `owner` holds a lease on count as due too:
   * those its INSERT leased that the dispatcher's inbox had no room for. A poll leaves them out:
   * they are the rows the dispatcher holds, and leasing them again wrote every held row once a
   * poll (bench/README.md, the webhook section, has the updates per notice).
   */
  async claim(
    receiver: string,
    limit: number,
    leaseMs: number,
    owner: string,
    now = Date.now(),
    { afterId, ownLeases = true }: { afterId?: bigint; ownLeases?: boolean } = {},
  ): Promise<ClaimedNotice[]> {
    let due = this.db
      .selectFrom('webhook_outbox')
      .select('id')
      .where('receiver', '=', receiver)
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      // PostgreSQL: leases are times of the database's clock, so replicas' clocks do not matter.
      // Rows this process's INSERT leased but its inbox had no room for are its own to take at
      // once (the dispatcher skips those it holds), not after their lease runs out.
      .where((eb) =>
        eb.or([
          eb('lease_until', 'is', null),
          eb('lease_until', '<=', this.postgres ? databaseNowMs : now),
          ...(this.postgres && ownLeases ? [eb('leased_by', '=', owner)] : []),
        ]),
      )
      // A receiver another replica saw answer 410 gets nothing more from this one either.
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('webhook_receivers')
              .select('receiver')
              .where('webhook_receivers.receiver', '=', receiver),
          ),
        ),
      )
      .orderBy('id')
      .limit(limit);
    if (afterId !== undefined) due = due.where('id', '>', afterId);
    if (!this.postgres) {
      // One process per store, and the dispatcher skips the rows it already holds (handed in
      // memory, in flight, or delivered and not yet marked): no lease is needed, so the claim
      // writes (and fsyncs) nothing. A notice sent but not yet recorded when the process dies
      // is sent again after the start.
      const rows = await due.select(['event_id', 'payload', 'attempts', 'created_at']).execute();
      return rows.map(toNotice);
    }
    // PostgreSQL replicas skip each other's rows. The lease's commit is not waited for
    // (asynchronous commit): lost only if PostgreSQL itself crashes, and then the notice is at
    // worst sent twice, which at-least-once allows.
    const rows = await this.db
      .updateTable('webhook_outbox')
      .set({ lease_until: leaseEnd(leaseMs), leased_by: owner })
      .where('id', 'in', due.forUpdate().skipLocked())
      .where(asynchronousCommit)
      .returning(['id', 'event_id', 'payload', 'attempts', 'created_at'])
      .execute();
    return rows.map(toNotice).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /**
   * The embedded store allows one process per DATA_DIR (an exclusive lock), so at start every
   * lease is a dead process's: release them now rather than after they run out.
   */
  async releaseLeasesIfSingleProcess(): Promise<void> {
    if (this.postgres) return;
    await this.db
      .updateTable('webhook_outbox')
      .set({ lease_until: null, leased_by: null })
      .where('state', '=', 'pending')
      .where('lease_until', 'is not', null)
      .execute();
  }

  /** A clean shutdown hands its leased notices back at once instead of when the lease ends. */
  async releaseLeasesOf(owner: string): Promise<void> {
    await this.db
      .updateTable('webhook_outbox')
      .set({ lease_until: null, leased_by: null })
      .where('state', '=', 'pending')
      .where('leased_by', '=', owner)
      .execute();
  }

  /**
   * Several delivered notices in one statement, whose commit is not flushed to disk on its own:
   * the next plant commit flushes it (SQLite's WAL, PostgreSQL's asynchronous commit). A crash
   * before that only forgets the mark, and the notice is sent again: at least once holds, and
   * the plants' commits do not queue behind these.
   */
  async deliveredAll(ids: bigint[], now = Date.now()): Promise<void> {
    const update = (db: Kysely<Database>) =>
      db
        .updateTable('webhook_outbox')
        .set({
          state: 'delivered',
          attempts: sql<number>`attempts + 1`,
          finished_at: now,
          lease_until: null,
          last_error: null,
        })
        .where('id', 'in', ids);
    if (this.postgres) {
      await update(this.db).where(asynchronousCommit).execute();
      return;
    }
    // synchronous is per connection and cannot change inside a transaction: the one
    // connection is held (no plant commit runs in between) and set back to FULL at once.
    await this.db.connection().execute(async (connection) => {
      await sql`PRAGMA synchronous = NORMAL`.execute(connection);
      try {
        await update(connection).execute();
      } finally {
        await sql`PRAGMA synchronous = FULL`.execute(connection);
      }
    });
  }

  async delivered(id: bigint, attempts: number, now = Date.now()): Promise<void> {
    await this.finish(id, 'delivered', attempts, null, now);
  }

  /**
   * Retries exhausted. On PostgreSQL only while `owner` still holds the lease: a replica that
   * lost it (stalled past it) leaves the new holder's attempt alone.
   */
  async failed(
    id: bigint,
    attempts: number,
    error: string,
    owner: string,
    now = Date.now(),
  ): Promise<void> {
    await this.finish(id, 'failed', attempts, error, now, owner);
  }

  /** Like `failed`, only while `owner` holds the lease (PostgreSQL). */
  async retryAt(
    id: bigint,
    attempts: number,
    next: number,
    error: string,
    owner: string,
  ): Promise<void> {
    let update = this.db
      .updateTable('webhook_outbox')
      .set({ attempts, next_attempt_at: next, last_error: error, lease_until: null })
      .where('id', '=', id)
      // Another replica may have taken the row over and finished it meanwhile: that stands.
      .where('state', '=', 'pending');
    // Or taken it over and holds it now: its lease and attempts stand too.
    if (this.postgres) update = update.where('leased_by', '=', owner);
    await update.execute();
  }

  /**
   * 410 Gone: this receiver gets nothing more, its pending notices included, on every replica
   * and after restarts (a row in `webhook_receivers`, in the same transaction as the notices).
   */
  async stopReceiver(receiver: WebhookReceiver, now = Date.now()): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('webhook_receivers')
        .values({ receiver: receiver.id, host: receiver.host, stopped_at: now, reason: '410 Gone' })
        .onConflict((oc) => oc.column('receiver').doNothing())
        .execute();
      await this.finishPendingOf(trx, receiver.id, now);
    });
    // Only once committed: /health's "stopped" means it holds after a restart.
    this.stopped.add(receiver.id);
  }

  /**
   * Reloads the stopped receivers from the table (another replica's 410, or an operator's
   * DELETE re-enabling one) and closes the pending notices of those stopped; returns their ids.
   */
  async loadStopped(now = Date.now()): Promise<Set<string>> {
    const rows = await this.db.selectFrom('webhook_receivers').select('receiver').execute();
    const stopped = new Set(rows.map((row) => row.receiver));
    for (const id of stopped) {
      // Notices written before this replica knew of the stop.
      if (!this.stopped.has(id)) await this.finishPendingOf(this.db, id, now);
    }
    this.stopped = stopped;
    return stopped;
  }

  isStopped(receiver: string): boolean {
    return this.stopped.has(receiver);
  }

  /**
   * Forgets the stops of receivers no longer configured, so one the operator removes and later
   * adds again starts afresh. Run at start: the configuration is the operator's current word.
   */
  async forgetUnconfigured(configured: string[]): Promise<void> {
    let query = this.db.deleteFrom('webhook_receivers');
    if (configured.length > 0) query = query.where('receiver', 'not in', configured);
    await query.execute();
  }

  private async finishPendingOf(
    db: Kysely<Database>,
    receiver: string,
    now: number,
  ): Promise<void> {
    await db
      .updateTable('webhook_outbox')
      .set({ state: 'stopped', finished_at: now, lease_until: null, last_error: '410 Gone' })
      .where('receiver', '=', receiver)
      .where('state', '=', 'pending')
      .execute();
  }

  /** Pending notices of every replica, and the creation time of the oldest. */
  async backlog(): Promise<{ pending: number; oldestCreatedAt: number | undefined }> {
    const row = await this.db
      .selectFrom('webhook_outbox')
      .select((eb) => [eb.fn.countAll().as('pending'), eb.fn.min('created_at').as('oldest')])
      .where('state', '=', 'pending')
      .executeTakeFirst();
    const oldest = row?.oldest;
    return {
      pending: Number(row?.pending ?? 0),
      oldestCreatedAt: oldest === null || oldest === undefined ? undefined : Number(oldest),
    };
  }

  /**
   * Deletes finished notices (delivered, or failed and stopped ones kept for inspection) older
   * than `before`, a bounded batch at a time; returns how many went. Rows of receivers no longer
   * configured are pending forever otherwise, so those are deleted at the same age.
   */
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

  private async finish(
    id: bigint,
    state: 'delivered' | 'failed',
    attempts: number,
    error: string | null,
    now: number,
    owner?: string,
  ): Promise<void> {
    let update = this.db
      .updateTable('webhook_outbox')
      .set({ state, attempts, finished_at: now, lease_until: null, last_error: error })
      .where('id', '=', id)
      // A notice another replica delivered stays delivered.
      .where('state', '=', 'pending');
    // A failure counts only from the lease's holder; a delivery is a delivery, whoever made it.
    if (this.postgres && owner !== undefined) update = update.where('leased_by', '=', owner);
    await update.execute();
  }
}

/**
 * The NewPlant body, written directly (a plant is three flat fields, and JSON.stringify escapes
 * a string as lossless-json does; a test checks they agree).
 */
function payloadOf(plant: NewPlant): string {
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${
    plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  }}`;
}

interface InsertedRow {
  id: bigint | number | string;
  event_id: string;
  receiver: string;
}

function toNotice(row: {
  id: bigint | number | string;
  event_id: string;
  payload: string;
  attempts: number | bigint;
  created_at: number | bigint;
}): ClaimedNotice {
  return {
    id: BigInt(row.id),
    eventId: row.event_id,
    payload: row.payload,
    attempts: Number(row.attempts),
    createdAt: Number(row.created_at),
  };
}

/**
 * PostgreSQL: the database's clock in epoch milliseconds. Leases are written and compared with
 * it, never with a replica's own clock: a replica whose clock is ahead would otherwise claim
 * notices others still hold. clock_timestamp(), not now(): the time of the statement's run,
 * not of its transaction's start.
 */
const DATABASE_NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
const databaseNowMs = sql.raw<number>(DATABASE_NOW_MS);

/** A lease's end, `leaseMs` from now by the database's clock. */
function leaseEnd(leaseMs: number) {
  return sql<number>`${databaseNowMs} + ${sql.lit(Math.round(leaseMs))}`;
}

/**
 * PostgreSQL: this statement's own commit does not wait for its WAL flush (SET LOCAL
 * synchronous_commit = off, evaluated once per statement), for the dispatcher's bookkeeping only.
 */
const asynchronousCommit = sql<boolean>`(SELECT set_config('synchronous_commit', 'off', true)) = 'off'`;
