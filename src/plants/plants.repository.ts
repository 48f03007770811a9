import { Inject, Injectable } from '@nestjs/common';
import type { Kysely } from 'kysely';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { DatabaseUnavailableError, isUnavailable } from '../database/database-unavailable.error.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import type { Database } from '../database/database.types.js';
import { KYSELY } from '../database/database.tokens.js';
import { GroupCommitQueue } from '../database/group-commit-queue.js';
import type { InsertOutcome, Plant } from './plant.js';

/** Rows per grouped INSERT: well under SQLite's bound-parameter limit (3 per row). */
const MAX_BATCH = 500;

/**
 * The only place with SQL for plants. The same Kysely queries run on SQLite and PostgreSQL.
 *
 * Inserts are group-committed: concurrent creations become one
 * `INSERT ... ON CONFLICT (id) DO NOTHING RETURNING id`, one transaction and one fsync. A row
 * missing from RETURNING already existed, so each duplicate still gets its own answer, and
 * uniqueness is decided by the database's primary key, never by a read-then-write.
 */
@Injectable()
export class PlantsRepository {
  private readonly inserts: GroupCommitQueue<Plant, InsertOutcome>;

  constructor(
    @Inject(KYSELY) private readonly db: Kysely<Database>,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly health: DatabasePingService,
  ) {
    this.inserts = new GroupCommitQueue({
      flush: (plants) => this.insertBatch(plants),
      key: (plant) => plant.id.toString(),
      maxBatch: MAX_BATCH,
      // SQLite has one writer; PostgreSQL commits several batches in parallel on the pool.
      concurrency: config.database.kind === 'sqlite' ? 1 : 4,
    });
  }

  insert(plant: Plant): Promise<InsertOutcome> {
    return this.inserts.push(plant);
  }

  findById(id: bigint): Promise<Plant | undefined> {
    return this.run(async () => {
      const row = await this.db
        .selectFrom('plants')
        .select(['id', 'name', 'tag'])
        .where('id', '=', id)
        .executeTakeFirst();
      return row && toPlant(row);
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
      const result = await this.db.deleteFrom('plants').where('id', '=', id).executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  private insertBatch(plants: Plant[]): Promise<InsertOutcome[]> {
    return this.run(async () => {
      const inserted = await this.db
        .insertInto('plants')
        .values(plants.map((p) => ({ id: p.id, name: p.name, tag: p.tag ?? null })))
        .onConflict((conflict) => conflict.column('id').doNothing())
        .returning('id')
        .execute();
      const created = new Set(inserted.map((row) => BigInt(row.id)));
      return plants.map((p) => (created.has(p.id) ? 'created' : 'duplicate'));
    });
  }

  /** Connection failures become DatabaseUnavailableError (503) and move `db_up`. */
  private async run<T>(query: () => Promise<T>): Promise<T> {
    try {
      const result = await query();
      if (!this.health.lastResult.up) this.health.record(true);
      return result;
    } catch (error) {
      if (isUnavailable(error)) {
        this.health.record(false, error instanceof Error ? error.message : undefined);
        throw new DatabaseUnavailableError(error);
      }
      throw error;
    }
  }
}

function toPlant(row: { id: bigint; name: string; tag: string | null }): Plant {
  return { id: BigInt(row.id), name: row.name, tag: row.tag ?? undefined };
}
