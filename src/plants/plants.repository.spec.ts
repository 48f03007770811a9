import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { pino } from 'pino';
import { Histogram } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppConfig } from '../config/app-config.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import { DatabaseUnavailableError } from '../database/database-unavailable.error.js';
import type { Database } from '../database/database.types.js';
import { migrateToLatest } from '../database/migrate.js';
import { openPostgres } from '../database/postgres.connection.js';
import { openSqlite } from '../database/sqlite.connection.js';
import { StoreIntegrityService } from '../database/store-integrity.service.js';
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
      return Promise.resolve({ db, integrity: new StoreIntegrityService(identity, logger) });
    },
  },
  ...(postgresAvailable
    ? [
        {
          kind: 'postgres' as const,
          open: async () => ({
            db: openPostgres({ url: await createTestDatabase(), logger }),
            integrity: new StoreIntegrityService(undefined, logger),
          }),
        },
      ]
    : []),
];

type Opened = { db: Kysely<Database>; integrity: StoreIntegrityService };

async function repositoryOn(
  kind: 'sqlite' | 'postgres',
  { db, integrity }: Opened,
  commitSeconds = new Histogram({ name: 'c', help: 'c', registers: [] }),
  batchSize = new Histogram({ name: 'b', help: 'b', registers: [] }),
): Promise<PlantsRepository> {
  await migrateToLatest(db, logger);
  const config = {
    database: { kind },
    webhooks: { receivers: [], retrySchedule: [] },
  } as unknown as AppConfig;
  const outbox = new WebhookOutboxRepository(db, config);
  const health = new DatabasePingService(db, integrity, sqliteProbe);
  return new PlantsRepository(db, config, health, integrity, outbox, commitSeconds, batchSize);
}

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
    repository = await repositoryOn(store.kind, opened, commitSeconds, batchSize);
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

/** SQLite commits with synchronous=NORMAL and flushes the WAL itself, off the event loop. */
describe('PlantsRepository on sqlite, flushing the WAL', () => {
  const plant: Plant = { id: 1n, name: 'fern', tag: undefined };

  async function opened() {
    const dir = mkdtempSync(join(tmpdir(), 'plants-flush-'));
    const { db, identity } = openSqlite(join(dir, 'p.sqlite'), dir);
    const integrity = new StoreIntegrityService(identity, logger);
    return { db, identity, integrity, repository: await repositoryOn('sqlite', { db, integrity }) };
  }

  /** True while `promise` is unsettled after the event loop went round twice. */
  async function pending(promise: Promise<unknown>): Promise<boolean> {
    const turned = new Promise((resolve) => setImmediate(() => setImmediate(resolve, true)));
    return (await Promise.race([promise.then(() => false), turned])) === true;
  }

  it('answers a write, and lets a read see it, only once its WAL is on disk', async () => {
    const { db, identity, repository } = await opened();
    const flush = identity.flushWal.bind(identity);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let flushing!: () => void;
    const started = new Promise<void>((resolve) => (flushing = resolve));
    identity.flushWal = async () => {
      flushing();
      await gate;
      await flush();
    };
    const insert = repository.insert(plant);
    await started;
    const read = repository.findById(plant.id);
    expect(await pending(insert)).toBe(true);
    expect(await pending(read)).toBe(true);
    release();
    expect(await insert).toBe('created');
    expect(await read).toEqual(plant);
    await db.destroy();
  });

  it('answers 503 from a failed flush on, as the kernel may have dropped the pages', async () => {
    const { db, identity, integrity, repository } = await opened();
    identity.flushWal = () => Promise.reject(new Error('EIO: i/o error, fdatasync'));
    await expect(repository.insert(plant)).rejects.toThrow(DatabaseUnavailableError);
    expect(integrity.knownProblem).toMatch(/cannot flush the WAL file .*-wal to disk \(EIO/);
    await expect(repository.findById(plant.id)).rejects.toThrow(DatabaseUnavailableError);
    await db.destroy();
  });
});
