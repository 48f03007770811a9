import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { pino } from 'pino';
import { Histogram } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AppConfig } from '../config/app-config.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import type { Database } from '../database/database.types.js';
import { migrateToLatest } from '../database/migrate.js';
import { openPostgres } from '../database/postgres.connection.js';
import { openSqlite } from '../database/sqlite.connection.js';
import { sqliteProbe } from '../database/store-probe.js';
import { CREATED_COLUMNS, PlantNotices } from '../plants/plant-notices.js';
import { PlantsRepository } from '../plants/plants.repository.js';
import { createTestDatabase, postgresAvailable } from '../../test/support/postgres.js';
import { stringifyJson } from '../common/json/lossless-json.js';
import { parseWebhookReceivers } from '../config/webhook-receivers.js';
import pg from 'pg';
import {
  type ClaimedNotice,
  OUTBOX_CHANNEL,
  WebhookOutboxRepository,
} from './webhook-outbox.repository.js';

const logger = pino({ level: 'silent' });
let postgresUrl = '';
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const stores = [
  {
    kind: 'sqlite' as const,
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'outbox-repo-'));
      return Promise.resolve(openSqlite(join(dir, 'p.sqlite'), dir).db);
    },
  },
  ...(postgresAvailable
    ? [
        {
          kind: 'postgres' as const,
          open: async () => {
            postgresUrl = await createTestDatabase();
            return openPostgres({ url: postgresUrl, logger });
          },
        },
      ]
    : []),
];

async function until(what: string, condition: () => Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `count` generated rows `i` (1..count), as the head of an INSERT's SELECT on either store. */
const manyRows = (count: number) =>
  sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count}) SELECT`;

/** A traced plant, a duplicate of plant 2 and an untraced plant, for one grouped write. */
const MIXED_BATCH = [
  { id: 901n, name: 'Traced', tag: 't', traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
  { id: 2n, name: 'A duplicate', tag: undefined },
  { id: 902n, name: 'Untraced', tag: undefined },
];

/** A PostgreSQL connection LISTENing on the outbox's channel; `notified` at the first NOTIFY. */
async function listen(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const notified = new Promise((resolve) => client.on('notification', resolve));
  await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
  return { client, notified };
}

/** The plants repository that writes the outbox; the file-identity check is not under test. */
function plantsRepository(
  db: Kysely<Database>,
  config: AppConfig,
  outbox: WebhookOutboxRepository,
): PlantsRepository {
  return new PlantsRepository(
    db,
    config,
    new DatabasePingService(db, sqliteProbe, undefined, logger),
    outbox,
    new Histogram({ name: 'commit_seconds', help: 'unused here', registers: [] }),
    new Histogram({ name: 'commit_batch_size', help: 'unused here', registers: [] }),
  );
}

/** The outbox against a real database file or server, written through the plants repository. */
describe.each(stores)('the webhook outbox on $kind', (store) => {
  let db: Kysely<Database>;
  let plants: PlantsRepository;
  let outbox: WebhookOutboxRepository;
  let config: AppConfig;
  const [a, b] = parseWebhookReceivers(
    'http://127.0.0.1:1/a,http://127.0.0.1:1/b',
    `${secret},${secret}`,
    true,
  ).receivers;
  const rows = () => db.selectFrom('webhook_outbox').selectAll().orderBy('id').execute();

  beforeAll(async () => {
    db = await store.open();
    await migrateToLatest(db, logger);
    config = {
      database: { kind: store.kind, pool: { max: 5 } },
      webhooks: { receivers: [a, b], retrySchedule: [1] },
    } as unknown as AppConfig;
    outbox = new WebhookOutboxRepository(db, config);
    plants = plantsRepository(db, config, outbox);
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('writes one notice per created plant and receiver, none for a duplicate or a refused row', async () => {
    const outcomes = await Promise.all([
      plants.insert({ id: 9007199254740993n, name: 'Monstera', tag: 'aroid' }),
      plants.insert({ id: 2n, name: 'Fern', tag: undefined }),
    ]);
    expect(outcomes).toEqual(['created', 'created']);
    expect(await plants.insert({ id: 2n, name: 'Fern again', tag: undefined })).toBe('duplicate');
    const refused = { id: 3n, name: null as unknown as string, tag: undefined };
    await expect(plants.insert(refused)).rejects.toThrow();
    const written = await rows();
    expect(written).toHaveLength(4);
    expect(written.map((r) => `${r.receiver} ${r.payload}`).sort()).toEqual(
      [
        `${a!.id} {"id":2,"name":"Fern"}`,
        `${a!.id} {"id":9007199254740993,"name":"Monstera","tag":"aroid"}`,
        `${b!.id} {"id":2,"name":"Fern"}`,
        `${b!.id} {"id":9007199254740993,"name":"Monstera","tag":"aroid"}`,
      ].sort(),
    );
    // One event id per plant, shared by its receivers.
    expect(new Set(written.map((r) => r.event_id)).size).toBe(2);
    expect(written.every((r) => r.state === 'pending')).toBe(true);
  });

  it('writes bodies exact as lossless JSON writes them (escapes, int64)', async () => {
    const tricky = [
      { id: 9223372036854775807n, name: 'a "quoted" \\ name\u0001\u2028 é 😀', tag: 'x\ny' },
      { id: -5n, name: '</script>', tag: undefined },
    ];
    const before = (await rows()).length;
    expect(await Promise.all(tricky.map((plant) => plants.insert(plant)))).toEqual([
      'created',
      'created',
    ]);
    const written = (await rows()).slice(before);
    expect(written).toHaveLength(4);
    for (const plant of tricky) {
      const expected = stringifyJson(
        plant.tag === undefined
          ? { id: plant.id, name: plant.name }
          : { id: plant.id, name: plant.name, tag: plant.tag },
      );
      const mine = written.filter((n) => n.payload === expected);
      expect(mine.map((n) => n.receiver).sort()).toEqual([a!.id, b!.id].sort());
      expect(new Set(mine.map((n) => n.event_id)).size).toBe(1);
    }
  });

  it.runIf(store.kind === 'sqlite')('adds notices only if the transaction commits', async () => {
    const plant = { id: 77n, name: 'Rolled back', tag: undefined };
    const rollback = new Error('rolled back by the test');
    const before = (await rows()).length;
    await expect(
      db.transaction().execute(async (trx) => {
        await new PlantNotices(db, outbox).add(trx, [plant]);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await rows()).toHaveLength(before);
  });

  it.runIf(store.kind === 'postgres')(
    'writes plants and notices in one statement, every column in its place, and NOTIFYs',
    async () => {
      const listener = await listen(postgresUrl);
      const insertFor = (count: number) =>
        db
          .insertInto('plants')
          .values(Array.from({ length: count }, () => ({ id: 0n, name: '', tag: null })))
          .onConflict((conflict) => conflict.column('id').doNothing())
          .returning(CREATED_COLUMNS);
      const batch = MIXED_BATCH;
      const before = Date.now();
      // Twice: the second run reuses the statement compiled for this shape.
      for (const round of [0n, 100n]) {
        const plants = batch.map((p) => (p.id === 2n ? p : { ...p, id: p.id + round }));
        const parameters = plants.flatMap((p) => [p.id, p.name, p.tag ?? null]);
        const created = await new PlantNotices(db, outbox).insertWith(
          insertFor,
          parameters,
          plants,
        );
        expect([...created].sort()).toEqual([901n + round, 902n + round]);
      }
      await expect(listener.notified).resolves.toBeDefined();
      await listener.client.end();
      const written = await db
        .selectFrom('webhook_outbox')
        .selectAll()
        .where('payload', 'like', '%"Traced"%')
        .execute();
      expect(written).toHaveLength(4);
      for (const row of written) {
        expect(row.state).toBe('pending');
        expect(row.trace_context).toBe(batch[0]!.traceparent);
        expect(row.event_id).toMatch(/^msg_[\w-]{22}$/);
        expect(Number(row.next_attempt_at)).toBe(Number(row.created_at));
        expect(Number(row.created_at)).toBeGreaterThanOrEqual(before);
      }
      const untraced = await db
        .selectFrom('webhook_outbox')
        .select(['trace_context', 'receiver'])
        .where('payload', 'like', '%"Untraced"%')
        .execute();
      expect(untraced.map((r) => r.trace_context)).toEqual([null, null, null, null]);
      expect(untraced.map((r) => r.receiver).sort()).toEqual([a!.id, a!.id, b!.id, b!.id].sort());
    },
  );

  it('stores nothing when no receiver is configured', async () => {
    const config = {
      database: { kind: store.kind, pool: { max: 5 } },
      webhooks: { receivers: [], retrySchedule: [1] },
    } as unknown as AppConfig;
    const none = new WebhookOutboxRepository(db, config);
    const quiet = plantsRepository(db, config, none);
    const before = (await rows()).length;
    expect(await quiet.insert({ id: 500n, name: 'Unseen', tag: undefined })).toBe('created');
    expect((await rows()).length).toBe(before);
  });

  describe('claims and outcomes', () => {
    beforeEach(async () => {
      await db.deleteFrom('webhook_outbox').execute();
      await db.deleteFrom('webhook_receivers').execute();
      outbox = new WebhookOutboxRepository(db, config);
      plants = plantsRepository(db, config, outbox);
    });
    let nextId = 10_000n;
    const create = (count: number) =>
      Promise.all(
        Array.from({ length: count }, () =>
          plants.insert({ id: nextId++, name: 'P', tag: undefined }),
        ),
      );
    const rowOf = async (id: bigint) => (await rows()).find((r) => BigInt(r.id) === id)!;

    it('leases due notices to one claimer; an expired lease is free again', async () => {
      await create(3);
      const first = await outbox.claim(a!.id, 2, 'one', 1_000);
      expect(first).toHaveLength(2);
      const second = await outbox.claim(a!.id, 10, 'two', 60_000);
      expect(second).toHaveLength(1);
      expect(await outbox.claim(a!.id, 10, 'two', 60_000)).toEqual([]);
      // The first claimer died: its lease runs out and another takes the notices over.
      const later: ClaimedNotice[] = [];
      await until('the lease runs out', async () => {
        later.push(...(await outbox.claim(a!.id, 10, 'two', 60_000)));
        return later.length >= 2;
      });
      expect(later.map((n) => n.eventId)).toEqual(first.map((n) => n.eventId));
    });

    it('records an outcome only while its claimer still holds the lease', async () => {
      await create(1);
      const [mine] = await outbox.claim(a!.id, 10, 'stalled', 1);
      let taken: ClaimedNotice[] = [];
      await until('another takes it over', async () => {
        taken = await outbox.claim(a!.id, 10, 'new-holder', 60_000);
        return taken.length > 0;
      });
      await outbox.record([mine!.id], 'stalled', { error: 'HTTP 503', retryInMs: 0 });
      await outbox.record([mine!.id], 'stalled', { error: 'HTTP 503', retryInMs: undefined });
      await outbox.record([mine!.id], 'stalled', { delivered: true });
      const after = await rowOf(mine!.id);
      expect([after.state, after.leased_by, Number(after.attempts)]).toEqual([
        'pending',
        'new-holder',
        0,
      ]);
      await outbox.record([mine!.id], 'new-holder', { delivered: true });
      expect([(await rowOf(mine!.id)).state, Number((await rowOf(mine!.id)).attempts)]).toEqual([
        'delivered',
        1,
      ]);
    });

    it('records retries (due again later) and failures, and counts the backlog per receiver', async () => {
      await create(2);
      const [one, two] = await outbox.claim(a!.id, 10, 'x', 60_000);
      await outbox.record([one!.id], 'x', { error: 'HTTP 503', retryInMs: 60_000 });
      await outbox.record([two!.id], 'x', { error: 'timeout', retryInMs: undefined });
      expect(await outbox.claim(a!.id, 10, 'x', 60_000)).toEqual([]);
      const retried = await rowOf(one!.id);
      expect([retried.state, Number(retried.attempts), retried.leased_by]).toEqual([
        'pending',
        1,
        null,
      ]);
      expect((await rowOf(two!.id)).state).toBe('failed');
      const backlog = await outbox.backlog([a!.id, b!.id], 100);
      expect(backlog.get(a!.id)?.pending).toBe(1);
      expect(backlog.get(b!.id)?.pending).toBe(2);
    });

    const planOf = async (query: {
      compile(): { sql: string; parameters: readonly unknown[] };
    }) => {
      const { sql: text, parameters } = query.compile();
      const explain = store.kind === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
      const plan = await db.executeQuery(CompiledQuery.raw(explain + text, [...parameters]));
      return plan.rows.map((row) => Object.values(row as object).join(' ')).join('\n');
    };

    // 4M pending rows made the unbounded count(*) hold the embedded store's event loop 1.4 s.
    it('counts a large backlog up to the cap, with plans that read index ranges only', async () => {
      const base = Date.now() - 60_000;
      await sql`
        INSERT INTO webhook_outbox (event_id, receiver, payload, created_at, next_attempt_at)
        ${manyRows(20_000)} 'e' || i, ${a!.id}, '{}', CAST(${base} AS bigint) + i, CAST(${base} AS bigint) + i FROM n`.execute(
        db,
      );
      if (store.kind === 'postgres') await sql`ANALYZE webhook_outbox`.execute(db);
      const capped = (await outbox.backlog([a!.id], 1000)).get(a!.id)!;
      expect([capped.pending, capped.capped]).toEqual([1000, true]);
      expect(capped.oldestAgeMs).toBeGreaterThanOrEqual(59_000);
      expect(capped.oldestAgeMs).toBeLessThan(120_000);
      const whole = (await outbox.backlog([a!.id], 50_000)).get(a!.id)!;
      expect([whole.pending, whole.capped]).toEqual([20_000, false]);

      for (const query of outbox.backlogQueries(a!.id, 1000)) {
        const { sql: text, parameters } = query.compile();
        const explain = store.kind === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
        const plan = await db.executeQuery(CompiledQuery.raw(explain + text, [...parameters]));
        const lines = plan.rows.map((row) => Object.values(row as object).join(' ')).join('\n');
        // Bounded: a LIMIT over an index range, and nothing sorted or scanned whole.
        if (store.kind === 'sqlite') {
          expect(lines).toMatch(
            /SEARCH webhook_outbox USING (COVERING )?INDEX webhook_outbox_pending/,
          );
          expect(lines).not.toMatch(/SCAN webhook_outbox|TEMP B-TREE/);
        } else {
          expect(lines).toMatch(/Limit/);
          expect(lines).not.toMatch(/Sort|GroupAggregate|HashAggregate/);
        }
      }
    });

    it('closes the notices a commit wrote while a 410 stop was recorded', async () => {
      await create(1);
      // A replica that has not seen the stop yet keeps writing notices for b.
      const unaware = new WebhookOutboxRepository(db, config);
      const unawarePlants = plantsRepository(db, config, unaware);
      await outbox.stopReceiver(b!);
      await unawarePlants.insert({ id: nextId++, name: 'Late', tag: undefined });
      const pendingOfB = async () =>
        (await rows()).filter((r) => r.receiver === b!.id && r.state === 'pending').length;
      expect(await pendingOfB()).toBe(1);
      // No claim hands it out; the delivery's upkeep closes it (before: pending until a restart).
      expect(await unaware.claim(b!.id, 10, 'y', 60_000)).toEqual([]);
      await outbox.closeNoticesOfStopped();
      expect(await pendingOfB()).toBe(0);
      expect((await outbox.backlog([b!.id], 100)).get(b!.id)).toBeUndefined();
    });

    it('keeps a 410 stop in the database until the receiver is removed from the configuration', async () => {
      await outbox.stopReceiver(b!);
      const stops = await db.selectFrom('webhook_receivers').selectAll().execute();
      expect(stops.map((r) => [r.receiver, r.host, r.reason])).toEqual([
        [b!.id, '127.0.0.1:1', '410 Gone'],
      ]);
      const other = new WebhookOutboxRepository(db, config);
      expect(await other.loadStopped()).toEqual(new Set([b!.id]));
      expect(other.receivers().map((r) => r.id)).toEqual([a!.id]);
      await other.forgetUnconfigured([a!.id, b!.id]);
      expect(await other.loadStopped()).toEqual(new Set([b!.id]));
      await other.forgetUnconfigured([a!.id]);
      expect(await other.loadStopped()).toEqual(new Set());
      expect(other.receivers().map((r) => r.id)).toEqual([a!.id, b!.id]);
    });

    it('prunes finished notices and orphans older than the cut, never pending ones of a receiver', async () => {
      await create(2);
      const [one] = await outbox.claim(a!.id, 1, 'x', 60_000);
      await outbox.record([one!.id], 'x', { delivered: true });
      const now = Date.now();
      expect(await outbox.prune(now + 1_000, [a!.id, b!.id])).toBe(1);
      const left = await rows();
      expect(left.every((r) => r.state === 'pending')).toBe(true);
      expect(await outbox.prune(now + 1_000, ['someone-else'])).toBe(left.length);
      expect(await rows()).toEqual([]);
    });

    it('prunes through indexes: finished rows by age, orphans among pending rows only', async () => {
      const base = Date.now() - 30 * 86_400_000;
      await sql`
        INSERT INTO webhook_outbox (event_id, receiver, payload, state, created_at, next_attempt_at, finished_at)
        ${manyRows(20_000)} 'e' || i, ${a!.id}, '{}', 'delivered', CAST(${base} AS bigint) + i, CAST(${base} AS bigint) + i, CAST(${base} AS bigint) + i FROM n`.execute(
        db,
      );
      if (store.kind === 'postgres') await sql`ANALYZE webhook_outbox`.execute(db);
      const [finished, orphans] = outbox.pruneQueries(base + 100, [a!.id]);
      const plans = [await planOf(finished.limit(1000)), await planOf(orphans.limit(1000))];
      if (store.kind === 'sqlite') {
        expect(plans[0]).toMatch(
          /SEARCH webhook_outbox USING (COVERING )?INDEX webhook_outbox_finished/,
        );
        expect(plans[1]).toMatch(/USING (COVERING )?INDEX webhook_outbox_pending/);
        // The orphans' read may walk the pending rows' index, never the table.
        for (const plan of plans) expect(plan).not.toMatch(/SCAN webhook_outbox(?! USING)/);
      } else {
        expect(plans[0]).toMatch(/Index (Only )?Scan using webhook_outbox_finished/);
        expect(plans[1]).toMatch(/Index (Only )?Scan using webhook_outbox_pending/);
        for (const plan of plans) expect(plan).not.toMatch(/Seq Scan/);
      }
      expect(await outbox.prune(base + 100, [a!.id])).toBe(99);
    });
  });
});
