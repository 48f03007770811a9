import { Inject, Injectable } from '@nestjs/common';
import { type Kysely, sql } from 'kysely';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import { databaseNowMs } from '../database/database-clock.js';
import type { Database } from '../database/database.types.js';
import { KYSELY } from '../database/database.tokens.js';

/** A pending notice leased to this process for one attempt; `traceContext` is a traceparent. */
export type ClaimedNotice = Awaited<ReturnType<WebhookOutboxRepository['claim']>>[number];

/** A receiver's pending notices (counted up to a cap) and its oldest's age. */
type Backlog = { pending: number; capped: boolean; oldestAgeMs: number };

/** The PostgreSQL channel a commit that wrote notices signals on (LISTEN/NOTIFY). */
export const OUTBOX_CHANNEL = 'webhook_outbox';

/**
 * The outbox, the table that is the queue: plants add notices for the receivers this names,
 * delivery leases due rows. Times are PostgreSQL's clock (shared by replicas), ours on SQLite.
 */
@Injectable()
export class WebhookOutboxRepository {
  /** Receivers stopped by a 410 (a copy of `webhook_receivers`): no notices are written for them. */
  private stopped = new Set<string>();
  private readonly postgres: boolean;
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

  /** Leases up to `limit` due notices of a receiver, first due first; an expired lease is free. */
  async claim(receiver: string, limit: number, owner: string, leaseMs: number) {
    let due = this.db
      .selectFrom('webhook_outbox')
      .select('id')
      .where('receiver', '=', receiver)
      // A literal, so that both stores' planners may use the index of pending rows.
      .where('state', '=', sql.lit('pending'))
      .where('next_attempt_at', '<=', this.now())
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

  /** Delivered, due again in `retryInMs`, or `failed`: only while `owner` still holds the lease. */
  async record(
    ids: bigint[],
    owner: string,
    outcome: { delivered: true } | { error: string; retryInMs: number | undefined },
  ): Promise<void> {
    const { error = null, retryInMs } = 'delivered' in outcome ? {} : outcome;
    const now = this.now();
    await this.db
      .updateTable('webhook_outbox')
      .set({
        state: retryInMs !== undefined ? 'pending' : error === null ? 'delivered' : 'failed',
        last_error: error,
        ...(retryInMs === undefined
          ? { finished_at: now }
          : { next_attempt_at: sql<number>`${now} + ${retryInMs}` }),
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

  /**
   * Each receiver's pending notices, counted up to `cap`, and its oldest's age (negative when
   * the writer's clock ran ahead). Index ranges only: a count(*) of 4M rows took 1.4 s.
   */
  async backlog(receivers: string[], cap: number): Promise<Map<string, Backlog>> {
    const backlog = new Map<string, Backlog>();
    for (const receiver of receivers) {
      const [counted, oldest] = this.backlogQueries(receiver, cap);
      const { pending } = await counted.executeTakeFirstOrThrow();
      const row = await oldest.executeTakeFirst();
      if (Number(pending) === 0 || !row) continue;
      const capped = Number(pending) >= cap;
      backlog.set(receiver, { pending: Number(pending), capped, oldestAgeMs: Number(row.ageMs) });
    }
    return backlog;
  }

  /** The two bounded queries of `backlog` (their plans are checked in the tests). */
  backlogQueries(receiver: string, cap: number) {
    const pendingOf = this.db
      .selectFrom('webhook_outbox')
      .where('receiver', '=', receiver)
      // A literal, so that both stores' planners may use the partial indexes of pending rows.
      .where('state', '=', sql.lit('pending'));
    const counted = this.db
      .selectFrom(pendingOf.select(sql.lit(1).as('one')).limit(cap).as('capped'))
      .select((eb) => eb.fn.countAll().as('pending'));
    const oldest = pendingOf
      .select(sql<number>`${this.now()} - created_at`.as('ageMs'))
      .orderBy('created_at')
      .limit(1);
    return [counted, oldest] as const;
  }

  /** Up to `limit` old notices: finished ones, then pending ones of removed receivers. */
  async prune(before: number, configured: string[], limit = 1000): Promise<number> {
    const [finished, orphans] = this.pruneQueries(before, configured);
    const deleted = await this.deleteAtMost(finished, limit);
    return deleted < limit
      ? deleted + (await this.deleteAtMost(orphans, limit - deleted))
      : deleted;
  }

  /** The two selections of `prune`: finished by `finished_at`, orphans by receiver and age. */
  pruneQueries(before: number, configured: string[]) {
    const finished = this.db
      .selectFrom('webhook_outbox')
      .select('id')
      // Literals, so that both stores' planners may use the partial indexes.
      .where('state', '<>', sql.lit('pending'))
      .where('finished_at', '<', before);
    let orphans = this.db
      .selectFrom('webhook_outbox')
      .select('id')
      .where('state', '=', sql.lit('pending'))
      .where('created_at', '<', before);
    if (configured.length > 0) orphans = orphans.where('receiver', 'not in', configured);
    return [finished, orphans] as const;
  }

  private async deleteAtMost(
    rows: ReturnType<WebhookOutboxRepository['pruneQueries']>[number],
    limit: number,
  ): Promise<number> {
    const result = await this.db
      .deleteFrom('webhook_outbox')
      .where('id', 'in', rows.limit(limit))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Now in epoch ms: the database's clock on PostgreSQL (shared by replicas), ours on SQLite. */
  private now() {
    return this.postgres ? databaseNowMs : sql<number>`${Date.now()}`;
  }
}
