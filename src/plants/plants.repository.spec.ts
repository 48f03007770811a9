import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { pino } from 'pino';
import { Histogram } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppConfig } from '../config/app-config.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import type { Database } from '../database/database.types.js';
import { migrateToLatest } from '../database/migrate.js';
import { openPostgres } from '../database/postgres.connection.js';
import { openSqlite } from '../database/sqlite.connection.js';
import { sqliteProbe } from '../database/store-probe.js';
import { createTestDatabase, postgresAvailable } from '../../test/support/postgres.js';
import type { Plant } from './plant.js';
import { WebhookOutboxRepository } from '../webhooks/webhook-outbox.repository.js';
import { PlantsRepository } from './plants.repository.js';

const logger = pino({ level: 'silent' });

const stores = [
  {
    kind: 'sqlite' as const,
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'plants-repo-'));
      const { db, identity } = openSqlite(join(dir, 'p.sqlite'), dir);
      return Promise.resolve({ db, identity });
    },
  },
  ...(postgresAvailable
    ? [
        {
          kind: 'postgres' as const,
          open: async () => ({
            db: openPostgres({ url: await createTestDatabase(), logger }),
            identity: undefined,
          }),
        },
      ]
    : []),
];

/** The repository against a real database file or server: no mocks of the store. */
describe.each(stores)('PlantsRepository on $kind', (store) => {
  let db: Kysely<Database>;
  let repository: PlantsRepository;
  const commitSeconds = new Histogram({ name: 'c', help: 'c', registers: [] });
  const batchSize = new Histogram({ name: 'b', help: 'b', buckets: [1, 2, 4], registers: [] });
  const plant = (id: bigint, name = `p${id}`, tag?: string): Plant => ({ id, name, tag });

  beforeAll(async () => {
    const opened = await store.open();
    db = opened.db;
    await migrateToLatest(db, logger);
    const config = {
      database: { kind: store.kind, pool: { max: 5 } },
      webhooks: { receivers: [], retrySchedule: [] },
    } as unknown as AppConfig;
    const outbox = new WebhookOutboxRepository(db, config);
    repository = new PlantsRepository(
      db,
      config,
      new DatabasePingService(db, sqliteProbe, opened.identity, logger),
      outbox,
      commitSeconds,
      batchSize,
    );
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('stores int64 extremes exactly and reads them back', async () => {
    for (const id of [-(2n ** 63n), 2n ** 63n - 1n, 9007199254740993n]) {
      expect(await repository.insert(plant(id, 'x', 't'))).toBe('created');
      expect(await repository.findById(id)).toEqual({ id, name: 'x', tag: 't' });
    }
  });

  it('decides duplicates by the primary key, within one batch and across batches', async () => {
    const outcomes = await Promise.all(
      [1n, 2n, 1n, 3n, 2n].map((id) => repository.insert(plant(id))),
    );
    expect(outcomes).toEqual(['created', 'created', 'duplicate', 'created', 'duplicate']);
    expect(await repository.insert(plant(3n))).toBe('duplicate');
  });

  it('measures each committed group commit: its duration and its batch size', async () => {
    const count = async (histogram: Histogram) =>
      (await histogram.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
    const [commitsBefore, batchesBefore] = [await count(commitSeconds), await count(batchSize)];
    const sumBefore = (await batchSize.get()).values.find((v) => v.metricName === 'b_sum')!.value;
    await Promise.all([31n, 32n, 33n].map((id) => repository.insert(plant(id))));
    const commits = (await count(commitSeconds)) - commitsBefore;
    expect(commits).toBeGreaterThan(0);
    expect((await count(batchSize)) - batchesBefore).toBe(commits);
    const sum = (await batchSize.get()).values.find((v) => v.metricName === 'b_sum')!.value;
    expect(sum - sumBefore).toBe(3);
  });

  it('fails only the bad row of a batch, not the rows grouped with it', async () => {
    const bad = { id: 20n, name: null as unknown as string, tag: undefined };
    const results = await Promise.allSettled([
      repository.insert(plant(21n)),
      repository.insert(bad),
      repository.insert(plant(22n)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await repository.findById(21n)).toBeDefined();
    expect(await repository.findById(20n)).toBeUndefined();
  });

  it('lists in id order after a cursor and deletes', async () => {
    await Promise.all([100n, 101n, 102n].map((id) => repository.insert(plant(id))));
    const page = await repository.list(2, 99n);
    expect(page.map((p) => p.id)).toEqual([100n, 101n]);
    expect(await repository.delete(100n)).toBe(true);
    expect(await repository.delete(100n)).toBe(false);
    expect((await repository.list(1, 99n))[0]?.id).toBe(101n);
  });
});
