import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { CompiledQuery, Kysely, Selectable } from 'kysely';
import type { Histogram } from 'prom-client';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { DatabaseUnavailableError, isUnavailable } from '../database/database-unavailable.error.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import type { Database, PlantsTable } from '../database/database.types.js';
import { KYSELY } from '../database/database.tokens.js';
import { GroupCommitQueue } from '../database/group-commit-queue.js';
import { tracing } from '../common/tracing/tracing.js';
import { WebhookOutboxRepository } from '../webhooks/webhook-outbox.repository.js';
import { CREATED_COLUMNS, type NoticedPlant, PlantNotices } from './plant-notices.js';
import type { InsertOutcome, Plant } from './plant.js';

/** Rows per grouped INSERT: each count is a statement kept for life, so the set stays small. */
const MAX_BATCH = 128;

/**
 * The only SQL for plants, on both dialects. Inserts are group-committed as one
 * `INSERT ... ON CONFLICT (id) DO NOTHING RETURNING id, tag`: a row missing from RETURNING is a
 * duplicate, decided by the primary key, never by a read-then-write.
 */
@Injectable()
export class PlantsRepository {
  private readonly inserts: GroupCommitQueue<NoticedPlant, InsertOutcome | FailedInsert>;
  /** Grouped INSERTs compiled once per row count (compiling costs more than running). */
  private readonly insertQueries = new Map<number, CompiledQuery<{ id: bigint }>>();
  private readonly selectByIdQuery: CompiledQuery<PlantRow>;
  private readonly postgres: boolean;
  private readonly notices: PlantNotices;

  constructor(
    @Inject(KYSELY) private readonly db: Kysely<Database>,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly store: DatabasePingService,
    private readonly outbox: WebhookOutboxRepository,
    @InjectMetric('store_commit_duration_seconds') private readonly commitSeconds: Histogram,
    @InjectMetric('store_commit_batch_size') private readonly commitBatchSize: Histogram,
  ) {
    this.postgres = config.database.kind === 'postgres';
    this.notices = new PlantNotices(db, outbox);
    this.inserts = new GroupCommitQueue({
      flush: (plants) => this.timedInsertBatch(plants),
      key: (plant) => plant.id.toString(),
      maxBatch: MAX_BATCH,
      // SQLite has one writer; PostgreSQL commits batches in parallel on half the pool, so
      // reads always find a connection while commits wait on the disk.
      concurrency:
        config.database.kind === 'sqlite'
          ? 1
          : Math.max(1, Math.floor(config.database.pool.max / 2)),
      // Nothing is acknowledged that a restart would not find (the file deleted or replaced).
      confirm: () => this.store.assertDurable(),
      spanName: 'plants commit',
    });
    this.selectByIdQuery = this.db
      .selectFrom('plants')
      .select(['id', 'name', 'tag'])
      .where('id', '=', 0n)
      .compile();
  }

  async insert(plant: Plant): Promise<InsertOutcome> {
    // The webhook's notices keep the request's trace context: delivery continues that trace.
    const traceparent = tracing()?.carrierOf().traceparent;
    const outcome = await this.inserts.push(traceparent ? { ...plant, traceparent } : plant);
    if (outcome instanceof FailedInsert) throw outcome.error;
    return outcome;
  }

  findById(id: bigint): Promise<Plant | undefined> {
    return this.run(async () => {
      const query: CompiledQuery<PlantRow> = { ...this.selectByIdQuery, parameters: [id] };
      const { rows } = await this.db.executeQuery(query);
      return rows[0] && toPlant(rows[0]);
    });
  }

  /** Up to `limit` plants with an id greater than `after`, ordered by id. */
  list(limit: number, after: bigint | undefined): Promise<Plant[]> {
    return this.run(async () => {
      let query = this.db
        .selectFrom('plants')
        .select(['id', 'name', 'tag'])
        .orderBy('id')
        .limit(limit);
      if (after !== undefined) query = query.where('id', '>', after);
      const rows = await query.execute();
      return rows.map(toPlant);
    });
  }

  delete(id: bigint): Promise<boolean> {
    return this.run(async () => {
      this.store.assertDurable();
      const result = await this.db.deleteFrom('plants').where('id', '=', id).executeTakeFirst();
      // A single-statement commit: confirmed like a group commit before it is acknowledged.
      this.store.assertDurable();
      return result.numDeletedRows > 0n;
    });
  }

  /** insertBatch, measured: a flush that throws (store unavailable) is not a commit. */
  private async timedInsertBatch(plants: Plant[]): Promise<(InsertOutcome | FailedInsert)[]> {
    const stop = this.commitSeconds.startTimer();
    const outcomes = await this.insertBatch(plants);
    stop();
    this.commitBatchSize.observe(plants.length);
    return outcomes;
  }

  /** One statement; if the database refuses a row, each plant is retried alone. */
  private async insertBatch(plants: NoticedPlant[]): Promise<(InsertOutcome | FailedInsert)[]> {
    try {
      return await this.insertRows(plants);
    } catch (error) {
      if (plants.length === 1 || error instanceof DatabaseUnavailableError) throw error;
      return Promise.all(
        plants.map((plant) =>
          this.insertRows([plant]).then(
            ([outcome]) => outcome ?? new FailedInsert(new Error('no outcome')),
            (failure: unknown) => new FailedInsert(failure),
          ),
        ),
      );
    }
  }

  private insertRows(plants: NoticedPlant[]): Promise<InsertOutcome[]> {
    return this.run(async () => {
      // Looked at before the commit too: a write to a file already replaced would still be
      // found by a restart (its WAL is at the path) after it was answered 503.
      this.store.assertDurable();
      const query: CompiledQuery<{ id: bigint }> = {
        ...this.insertQueryFor(plants.length),
        parameters: plants.flatMap((p) => [p.id, p.name, p.tag ?? null]),
      };
      let created: Set<bigint>;
      if (!this.outbox.enabled) {
        const { rows } = await this.db.executeQuery(query);
        created = new Set(rows.map((row) => BigInt(row.id)));
      } else if (this.postgres) {
        // One statement, the plants with their notices: no transaction to open and commit.
        created = await this.notices.insertWith(
          (count) => this.insertBuilderFor(count),
          query.parameters,
          plants,
        );
        this.outbox.onCommitted?.();
      } else {
        // The webhook's notices ride in the plants' own transaction (one commit, one fsync):
        // every committed plant has them, and no notice exists for a plant that was not.
        created = await this.inTransaction(async (trx) => {
          const { rows } = await trx.executeQuery(query);
          const ids = new Set(rows.map((row) => BigInt(row.id)));
          const createdPlants = plants.filter((p) => ids.has(p.id));
          await this.notices.add(trx, createdPlants);
          return ids;
        });
        this.outbox.onCommitted?.();
      }
      return plants.map((p) => (created.has(p.id) ? 'created' : 'duplicate'));
    });
  }

  /**
   * A failure is rethrown as it came even when the rollback fails too: SQLite rolls back by
   * itself on a full disk, and ROLLBACK's error would hide the 503.
   */
  private async inTransaction<T>(work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    const trx = await this.db.startTransaction().execute();
    try {
      const result = await work(trx);
      await trx.commit().execute();
      return result;
    } catch (error) {
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      throw error;
    }
  }

  /** `INSERT ... VALUES (?, ?, ?) x count ... RETURNING id, tag`: id, name, tag per row. */
  private insertQueryFor(count: number): CompiledQuery<{ id: bigint }> {
    let query = this.insertQueries.get(count);
    if (!query) {
      query = this.insertBuilderFor(count).compile();
      this.insertQueries.set(count, query);
    }
    return query;
  }

  private insertBuilderFor(count: number) {
    const placeholder = { id: 0n, name: '', tag: null };
    return this.db
      .insertInto('plants')
      .values(Array.from({ length: count }, () => placeholder))
      .onConflict((conflict) => conflict.column('id').doNothing())
      .returning(CREATED_COLUMNS);
  }

  /** Connection failures and a damaged store become 503 and move `db_up`. */
  private async run<T>(query: () => Promise<T>): Promise<T> {
    try {
      this.store.assertNoKnownProblem();
      const result = await query();
      if (!this.store.lastResult.up) this.store.record(true);
      return result;
    } catch (error) {
      if (error instanceof DatabaseUnavailableError) throw error;
      this.store.observe(error);
      if (isUnavailable(error)) {
        this.store.record(false, error instanceof Error ? error.message : undefined);
        throw new DatabaseUnavailableError(error);
      }
      throw error;
    }
  }
}

/** The outcome of one plant in a batch that failed for that plant alone. */
class FailedInsert {
  constructor(readonly error: unknown) {}
}

type PlantRow = Selectable<PlantsTable>;

function toPlant(row: PlantRow): Plant {
  return { id: BigInt(row.id), name: row.name, tag: row.tag ?? undefined };
}
