import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppConfig } from '../config/app-config.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import type { Database } from '../database/database.types.js';
import { migrateToLatest } from '../database/migrate.js';
import { openPostgres } from '../database/postgres.connection.js';
import { openSqlite } from '../database/sqlite.connection.js';
import { StoreIntegrityService } from '../database/store-integrity.service.js';
import { PlantsRepository } from '../plants/plants.repository.js';
import { createTestDatabase, postgresAvailable } from '../../test/support/postgres.js';
import { stringifyJson } from '../common/json/lossless-json.js';
import { parseWebhookReceivers } from '../config/webhook-receivers.js';
import { WebhookOutboxRepository } from './webhook-outbox.repository.js';

const logger = pino({ level: 'silent' });
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
          open: async () => openPostgres({ url: await createTestDatabase(), logger }),
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

/** The plants repository that writes the outbox; the file-identity check is not under test. */
function plantsRepository(
  db: Kysely<Database>,
  config: AppConfig,
  outbox: WebhookOutboxRepository,
): PlantsRepository {
  const integrity = new StoreIntegrityService(undefined, logger);
  return new PlantsRepository(
    db,
    config,
    new DatabasePingService(db, integrity),
    integrity,
    outbox,
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
  ).receivers;
  const rows = () => db.selectFrom('webhook_outbox').selectAll().orderBy('id').execute();

  beforeAll(async () => {
    db = await store.open();
    await migrateToLatest(db, logger);
    config = {
      database: { kind: store.kind },
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

  it('returns what it wrote, bodies exact as lossless JSON writes them (escapes, int64)', async () => {
    const tricky = [
      { id: 9223372036854775807n, name: 'a "quoted" \\ name\u0001\u2028 é 😀', tag: 'x\ny' },
      { id: -5n, name: '</script>', tag: undefined },
    ];
    const rollback = new Error('rolled back by the test');
    let notices: Awaited<ReturnType<WebhookOutboxRepository['insertEvents']>> = [];
    await expect(
      db.transaction().execute(async (trx) => {
        notices = await outbox.insertEvents(trx, tricky);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(notices).toHaveLength(4);
    for (const plant of tricky) {
      const expected = stringifyJson(
        plant.tag === undefined
          ? { id: plant.id, name: plant.name }
          : { id: plant.id, name: plant.name, tag: plant.tag },
      );
      const mine = notices.filter((n) => n.payload === expected);
      expect(mine.map((n) => n.receiver).sort()).toEqual([a!.id, b!.id].sort());
      expect(new Set(mine.map((n) => n.eventId)).size).toBe(1);
    }
    expect(new Set(notices.map((n) => n.id)).size).toBe(4);
  });

  it('stores nothing when no receiver is configured', async () => {
    const config = {
      database: { kind: store.kind },
      webhooks: { receivers: [], retrySchedule: [1] },
    } as unknown as AppConfig;
    const none = new WebhookOutboxRepository(db, config);
    const quiet = plantsRepository(db, config, none);
    const before = (await rows()).length;
    expect(await quiet.insert({ id: 500n, name: 'Unseen', tag: undefined })).toBe('created');
    expect((await rows()).length).toBe(before);
  });

  it.runIf(store.kind === 'postgres')(
    'leases a due notice to one claimer until the lease runs out',
    async () => {
      const first = await outbox.claim(a!.id, 10, 1_500, 'one');
      expect(first).toHaveLength(2);
      expect(await outbox.claim(a!.id, 10, 60_000, 'two')).toEqual([]);
      // A claimer that died: its lease runs out and the notices are claimable again.
      let later: Awaited<ReturnType<WebhookOutboxRepository['claim']>> = [];
      await until('the lease runs out', async () => {
        later = await outbox.claim(a!.id, 10, 1, 'two');
        return later.length > 0;
      });
      expect(later.map((n) => n.eventId)).toEqual(first.map((n) => n.eventId));
    },
  );

  it.runIf(store.kind === 'sqlite')(
    'claims without writing on the embedded store (one process, one lane per receiver)',
    async () => {
      const now = Date.now();
      const first = await outbox.claim(a!.id, 10, 60_000, 'one', now);
      expect(first).toHaveLength(2);
      expect(await outbox.claim(a!.id, 10, 60_000, 'one', now)).toEqual(first);
      expect((await rows()).every((r) => r.lease_until === null)).toBe(true);
    },
  );

  it('marks delivered notices in one statement, and leaves SQLite synchronous=FULL', async () => {
    const [one, two] = await outbox.claim(a!.id, 10, 1, 'x', Date.now() + 120_000);
    await outbox.deliveredAll([one!.id, two!.id]);
    const marked = (await rows()).filter((r) => r.id === one!.id || r.id === two!.id);
    expect(marked.map((r) => [r.state, Number(r.attempts)])).toEqual([
      ['delivered', 1],
      ['delivered', 1],
    ]);
    if (store.kind === 'sqlite') {
      // Plants' commits must still be flushed: 2 is FULL.
      const { rows: mode } = await sql<{
        synchronous: bigint;
      }>`PRAGMA synchronous`.execute(db);
      expect(Number(mode[0]!.synchronous)).toBe(2);
    }
  });

  it('records delivered, retried and stopped notices', async () => {
    const now = Date.now();
    const [one, two] = await outbox.claim(b!.id, 10, 1, 'x', now);
    await outbox.delivered(one!.id, 1, now);
    await outbox.retryAt(two!.id, 1, now + 5_000, 'HTTP 503', 'x');
    expect(await outbox.claim(b!.id, 10, 1, 'x', now + 10)).toEqual([]);
    const due = await outbox.claim(b!.id, 10, 1, 'x', now + 5_000);
    expect(due.map((n) => [n.id, n.attempts])).toEqual([[two!.id, 1]]);
    await outbox.stopReceiver(b!, now);
    const states = (await rows()).filter((r) => r.receiver === b!.id).map((r) => r.state);
    expect(states.sort()).toEqual(['delivered', 'stopped']);
    expect(outbox.receivers().map((r) => r.id)).toEqual([a!.id]);
  });

  it('keeps a 410 stop in the database: a restart or another replica sees it, until the receiver is removed', async () => {
    // b was stopped above: its row names the host, never the URL or the secret.
    const stops = await db.selectFrom('webhook_receivers').selectAll().execute();
    expect(stops.map((r) => [r.receiver, r.host, r.reason])).toEqual([
      [b!.id, '127.0.0.1:1', '410 Gone'],
    ]);
    // A new repository (a restart, or a replica that has not refreshed yet) writes b's notice...
    const other = new WebhookOutboxRepository(db, config);
    const otherPlants = plantsRepository(db, config, other);
    expect(other.isStopped(b!.id)).toBe(false);
    await otherPlants.insert({ id: 700n, name: 'Late', tag: undefined });
    const pendingOfB = async () =>
      (await rows()).filter((r) => r.receiver === b!.id && r.state === 'pending').length;
    expect(await pendingOfB()).toBe(1);
    // ...which no claim ever hands out, and which is closed once it reads the table.
    expect(await other.claim(b!.id, 10, 1, 'y', Date.now() + 10)).toEqual([]);
    expect(await other.loadStopped()).toEqual(new Set([b!.id]));
    expect(await pendingOfB()).toBe(0);
    expect(other.receivers().map((r) => r.id)).toEqual([a!.id]);
    // b removed from the configuration (at a start): its stop is forgotten, so re-added it
    // starts afresh.
    await other.forgetUnconfigured([a!.id, b!.id]);
    expect(await other.loadStopped()).toEqual(new Set([b!.id]));
    await other.forgetUnconfigured([a!.id]);
    expect(await other.loadStopped()).toEqual(new Set());
    expect(other.receivers().map((r) => r.id)).toEqual([a!.id, b!.id]);
  });

  it('prunes finished notices and orphans older than the cut, never pending ones of a receiver', async () => {
    const now = Date.now();
    await plants.insert({ id: 600n, name: 'Fresh', tag: undefined });
    const pendingBefore = (await rows()).filter((r) => r.state === 'pending').length;
    expect(pendingBefore).toBeGreaterThan(0);
    // Everything finished is older than a cut in the future; pending rows of configured
    // receivers stay whatever their age.
    const deleted = await outbox.prune(now + 1_000, [a!.id, b!.id]);
    const left = await rows();
    expect(deleted).toBeGreaterThan(0);
    expect(left.every((r) => r.state === 'pending')).toBe(true);
    expect(left.length).toBe(pendingBefore);
    // Once no receiver is configured for them, old pending rows are orphans and go too.
    expect(await outbox.prune(now + 1_000, ['someone-else'])).toBe(pendingBefore);
    expect(await rows()).toEqual([]);
  });
});

/** PostgreSQL replicas' leases, on a store of their own (the tests above share theirs). */
describe.runIf(postgresAvailable)('the webhook outbox leases on postgres', () => {
  let db: Kysely<Database>;
  let plants: PlantsRepository;
  let outbox: WebhookOutboxRepository;
  const [a] = parseWebhookReceivers('http://127.0.0.1:1/a', secret).receivers;
  const rows = () => db.selectFrom('webhook_outbox').selectAll().orderBy('id').execute();

  beforeAll(async () => {
    db = openPostgres({ url: await createTestDatabase(), logger });
    await migrateToLatest(db, logger);
    const config = {
      database: { kind: 'postgres' },
      webhooks: { receivers: [a], retrySchedule: [1] },
    } as unknown as AppConfig;
    outbox = new WebhookOutboxRepository(db, config);
    plants = plantsRepository(db, config, outbox);
  });
  afterAll(async () => {
    await db.destroy();
  });
  /** PostgreSQL's clock in epoch ms. */
  const databaseNow = async () => {
    const { rows: clock } = await sql<{
      now: string;
    }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint as now`.execute(db);
    return Number(clock[0]!.now);
  };

  it("times leases by the database's clock: a replica whose clock is an hour ahead claims no live lease", async () => {
    await plants.insert({ id: 800n, name: 'Skewed', tag: undefined });
    const held = await outbox.claim(a!.id, 10, 60_000, 'one');
    expect(held).toHaveLength(1); // the precondition: a live lease
    const ahead = Date.now() + 3_600_000;
    expect(await outbox.claim(a!.id, 10, 60_000, 'fast-clock', ahead)).toEqual([]);
    // Renewed and written by the database's clock too: about a minute from its now.
    expect(await outbox.renewLeases([held[0]!.id], 'one', 60_000)).toEqual(new Set([held[0]!.id]));
    const row = (await rows()).find((r) => r.id === held[0]!.id)!;
    const left = Number(row.lease_until) - (await databaseNow());
    expect(left).toBeGreaterThan(50_000);
    expect(left).toBeLessThanOrEqual(60_000);
    // Done with it: delivered (unconditionally), so the tests below do not see it.
    await outbox.delivered(held[0]!.id, 1);
    // A lease written with the notice (in a transaction of the caller's) is the database's
    // clock too.
    const stop = outbox.onCommitted({ owner: 'writer', leaseMs: 60_000, take: () => undefined });
    try {
      const [notice] = await db
        .transaction()
        .execute((trx) => outbox.insertEvents(trx, [{ id: 802n, name: 'Leased' }]));
      const written = (await rows()).find((r) => r.id === notice!.id)!;
      expect(written.leased_by).toBe('writer');
      const ahead = Number(written.lease_until) - (await databaseNow());
      expect(ahead).toBeGreaterThan(50_000);
      expect(ahead).toBeLessThanOrEqual(60_000);
      await outbox.delivered(notice!.id, 1);
    } finally {
      stop();
    }
  });

  it("a claim without ownLeases leaves the owner's live leases alone (no row written); a page takes them", async () => {
    const stop = outbox.onCommitted({ owner: 'mine', leaseMs: 60_000, take: () => undefined });
    let notices;
    try {
      notices = await db.transaction().execute((trx) =>
        outbox.insertEvents(trx, [
          { id: 803n, name: 'Own' },
          { id: 804n, name: 'Own too' },
        ]),
      );
    } finally {
      stop();
    }
    const ids = notices.map((notice) => notice.id);
    const leases = async () =>
      (await rows()).filter((r) => ids.includes(BigInt(r.id))).map((r) => Number(r.lease_until));
    const written = await leases();
    // The precondition: live leases of 'mine', from the INSERT.
    expect(
      (await rows()).filter((r) => ids.includes(BigInt(r.id))).map((r) => r.leased_by),
    ).toEqual(['mine', 'mine']);
    // A poll (the rows this owner holds): nothing taken, no lease moved.
    expect(
      await outbox.claim(a!.id, 10, 120_000, 'mine', Date.now(), { ownLeases: false }),
    ).toEqual([]);
    expect(await leases()).toEqual(written);
    // A page (rows its inbox had no room for): both, leased anew.
    const paged = await outbox.claim(a!.id, 10, 120_000, 'mine', Date.now(), {
      afterId: ids[0]! - 1n,
    });
    expect(paged.map((notice) => notice.id)).toEqual(ids);
    expect((await leases()).every((until, i) => until > written[i]!)).toBe(true);
    for (const id of ids) await outbox.delivered(id, 1);
  });

  it('a replica that lost its lease neither retries nor fails the new holder’s notice; its delivery stands', async () => {
    await plants.insert({ id: 801n, name: 'Contested', tag: undefined });
    const [mine] = await outbox.claim(a!.id, 10, 1, 'stalled');
    expect(mine).toBeDefined();
    // The stalled replica's lease ran out; another took the notice over.
    let taken: Awaited<ReturnType<WebhookOutboxRepository['claim']>> = [];
    await until('another replica takes it', async () => {
      taken = await outbox.claim(a!.id, 10, 60_000, 'new-holder');
      return taken.length > 0;
    });
    expect(taken.map((n) => n.id)).toEqual([mine!.id]);
    const before = (await rows()).find((r) => r.id === mine!.id)!;
    await outbox.retryAt(mine!.id, 1, Date.now() + 5_000, 'HTTP 503', 'stalled');
    await outbox.failed(mine!.id, 3, 'HTTP 503', 'stalled');
    const after = (await rows()).find((r) => r.id === mine!.id)!;
    expect([after.state, after.leased_by, Number(after.attempts)]).toEqual([
      'pending',
      'new-holder',
      0,
    ]);
    expect(Number(after.lease_until)).toBe(Number(before.lease_until));
    expect(Number(after.next_attempt_at)).toBe(Number(before.next_attempt_at));
    // The holder's own outcome is recorded.
    await outbox.retryAt(mine!.id, 1, Date.now(), 'HTTP 503', 'new-holder');
    const retried = (await rows()).find((r) => r.id === mine!.id)!;
    expect([Number(retried.attempts), retried.lease_until]).toEqual([1, null]);
    // A delivery is a delivery, whoever made it.
    await outbox.delivered(mine!.id, 2);
    expect((await rows()).find((r) => r.id === mine!.id)!.state).toBe('delivered');
  });

  it('writes the plants without notices when no receiver is left (no empty VALUES list)', async () => {
    const none = new WebhookOutboxRepository(db, {
      database: { kind: 'postgres' },
      webhooks: { receivers: [], retrySchedule: [1] },
    } as unknown as AppConfig);
    const before = (await rows()).length;
    const query = db
      .insertInto('plants')
      .values([
        { id: 900n, name: 'Lonely', tag: null },
        { id: 901n, name: 'Alone', tag: null },
      ])
      .onConflict((conflict) => conflict.column('id').doNothing())
      .returning('id')
      .compile();
    const plantsOf = [
      { id: 900n, name: 'Lonely' },
      { id: 901n, name: 'Alone' },
    ];
    const written = await none.insertWithPlants(query, plantsOf);
    expect(written.created).toEqual(new Set([900n, 901n]));
    expect(written.notices).toEqual([]);
    expect((await rows()).length).toBe(before);
    // Again: duplicates now, neither created.
    expect((await none.insertWithPlants(query, plantsOf)).created).toEqual(new Set());
  });
});
