import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type Kysely, sql } from 'kysely';
import { type Logger, pino } from 'pino';
import { Counter, Gauge, Histogram } from 'prom-client';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, postgresAvailable } from '../../test/support/postgres.js';
import type { AppConfig } from '../config/app-config.js';
import { parseWebhookReceivers } from '../config/webhook-receivers.js';
import { DatabasePingService } from '../database/database-ping.service.js';
import type { Database } from '../database/database.types.js';
import { migrateToLatest } from '../database/migrate.js';
import { openPostgres } from '../database/postgres.connection.js';
import { openSqlite } from '../database/sqlite.connection.js';
import { StoreIntegrityService } from '../database/store-integrity.service.js';
import { PlantsRepository } from '../plants/plants.repository.js';
import { type WebhookDispatcherTiming, WebhookDispatcher } from './webhook-dispatcher.service.js';
import { type ClaimedNotice, WebhookOutboxRepository } from './webhook-outbox.repository.js';

/**
 * The dispatcher in this process against a real database, a real sending thread and a real
 * HTTP receiver on loopback, with intervals shortened through its test-only timing option.
 */
const logger = pino({ level: 'silent' });
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** Folders this file creates, removed at the end. */
const temporary: string[] = [];
function temporaryDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of temporary.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The sending thread built from the sources (vitest runs TypeScript; a Worker cannot): every
 * non-spec file of src/webhooks, and whatever the worker imports, followed through its relative
 * imports, laid out as in src/ so a new import of the worker's resolves as it does in dist/.
 */
const senderUrl = (() => {
  const src = fileURLToPath(new URL('..', import.meta.url));
  const here = fileURLToPath(new URL('.', import.meta.url));
  const out = temporaryDir('webhook-sender-');
  const worker = join(here, 'webhook-sender.worker.ts');
  const written = new Set<string>();
  const write = (file: string, follow: boolean) => {
    if (written.has(file)) return;
    written.add(file);
    const source = readFileSync(file, 'utf8');
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
      },
    });
    const target = join(out, relative(src, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
    if (!follow) return;
    for (const { fileName } of ts.preProcessFile(source).importedFiles) {
      if (fileName.startsWith('.')) {
        write(resolve(dirname(file), fileName).replace(/\.js$/, '.ts'), true);
      }
    }
  };
  write(worker, true);
  for (const name of readdirSync(here)) {
    if (name.endsWith('.ts') && !name.endsWith('.spec.ts')) write(join(here, name), false);
  }
  writeFileSync(join(out, 'package.json'), '{"type":"module"}');
  return pathToFileURL(join(out, relative(src, worker)).replace(/\.ts$/, '.js'));
})();

/** The built thread loads and answers, before any test relies on it. */
beforeAll(async () => {
  const worker = new Worker(senderUrl, {
    workerData: { receivers: [], concurrency: 1, timeoutMs: 1_000 },
  });
  try {
    const answer = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the sending thread exited (${code})`)));
      worker.postMessage({ type: 'send', batch: 1, receiver: 'nobody', notices: [] });
    });
    expect(answer).toEqual({ type: 'results', batch: 1, results: [] });
  } finally {
    await worker.terminate();
  }
});

const stores = [
  {
    kind: 'sqlite' as const,
    open: () => {
      const dir = temporaryDir('dispatcher-');
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

/** A receiver whose answers the test decides; held requests wait until released. */
class Receiver {
  readonly bodies: string[] = [];
  hold = false;
  /** Held requests whose connection the sender closed before they were answered. */
  cut = 0;
  private held: ServerResponse[] = [];
  private server: Server | undefined;

  async listen(): Promise<string> {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        this.bodies.push(body);
        if (this.hold) {
          this.held.push(response);
          response.on('close', () => {
            if (!response.writableEnded) this.cut++;
          });
        } else response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  release(): void {
    this.hold = false;
    for (const response of this.held.splice(0)) response.writeHead(204).end();
  }

  async close(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** PostgreSQL's clock in epoch ms, which leases are timed by. */
async function databaseNow(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{
    now: string;
  }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint as now`.execute(db);
  return Number(rows[0]!.now);
}

describe('the sending thread', () => {
  async function start(timeoutMs: number) {
    const receiver = new Receiver();
    receiver.hold = true;
    const url = await receiver.listen();
    const worker = new Worker(senderUrl, {
      workerData: {
        receivers: [{ id: 'r', url, keys: [new Uint8Array(32)] }],
        concurrency: 2,
        timeoutMs,
      },
    });
    const send = () =>
      new Promise<{ results: { kind: string; error?: string }[] }>((resolve) => {
        worker.on('message', (message: { type: string; results: [] }) => {
          if (message.type === 'results') resolve(message);
        });
        worker.postMessage({
          type: 'send',
          batch: 1,
          receiver: 'r',
          notices: [
            { eventId: 'msg_a', payload: '{"id":1}' },
            { eventId: 'msg_b', payload: '{"id":2}' },
          ],
        });
      });
    const stop = async () => {
      await worker.terminate();
      await receiver.close();
    };
    return { receiver, worker, send, stop };
  }

  it('cuts a wave at its timeout: each attempt a retry, its connection closed', async () => {
    const { receiver, send, stop } = await start(500);
    try {
      const answer = await send();
      expect(receiver.bodies).toHaveLength(2); // both were in flight
      expect(answer.results.map((r) => [r.kind, r.error])).toEqual([
        ['retry', 'timeout after 0.5 s'],
        ['retry', 'timeout after 0.5 s'],
      ]);
      await until('both connections closed', () => receiver.cut === 2);
    } finally {
      await stop();
    }
  });

  it('cuts every attempt in flight at once when the process stops', async () => {
    const { receiver, worker, send, stop } = await start(60_000);
    try {
      const answer = send();
      await until('both in flight', () => receiver.bodies.length === 2);
      worker.postMessage({ type: 'abort' });
      // Long before the minute's timeout.
      expect((await answer).results.map((r) => [r.kind, r.error])).toEqual([
        ['retry', 'AbortError'],
        ['retry', 'AbortError'],
      ]);
      await until('both connections closed', () => receiver.cut === 2);
    } finally {
      await stop();
    }
  });
});

describe.each(stores)('the webhook dispatcher on $kind', (store) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp(timing: Partial<WebhookDispatcherTiming>, log: Logger = logger) {
    const receiver = new Receiver();
    const url = await receiver.listen();
    cleanups.push(() => receiver.close());
    const db: Kysely<Database> = await store.open();
    cleanups.push(() => db.destroy().catch(() => undefined)); // a test may have closed it
    await migrateToLatest(db, logger);
    const config = {
      database: { kind: store.kind },
      webhooks: { ...parseWebhookReceivers(url, secret), retrySchedule: [1, 1, 1] },
    } as unknown as AppConfig;
    const outbox = new WebhookOutboxRepository(db, config);
    const integrity = new StoreIntegrityService(undefined, logger);
    const plants = new PlantsRepository(
      db,
      config,
      new DatabasePingService(db, integrity),
      integrity,
      outbox,
    );
    const metric = { registers: [] };
    const dispatcher = new WebhookDispatcher(
      outbox,
      config,
      log,
      new Counter({ name: 'f', help: 'f', labelNames: ['receiver', 'outcome'], ...metric }),
      new Counter({ name: 'a', help: 'a', labelNames: ['receiver', 'result'], ...metric }),
      new Histogram({ name: 'd', help: 'd', labelNames: ['receiver'], ...metric }),
      new Gauge({ name: 'p', help: 'p', ...metric }),
      new Gauge({ name: 'o', help: 'o', ...metric }),
      { senderUrl, ...timing },
    );
    await dispatcher.onApplicationBootstrap();
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await dispatcher.beforeApplicationShutdown();
    };
    cleanups.push(stop);
    const create = (ids: number[]) =>
      Promise.all(
        ids.map((id) => plants.insert({ id: BigInt(id), name: `p${id}`, tag: undefined })),
      );
    const rows = () =>
      db
        .selectFrom('webhook_outbox')
        .select(['id', 'state', 'attempts', 'leased_by', 'lease_until', 'payload'])
        .orderBy('id')
        .execute();
    const internals = dispatcher as unknown as {
      owner: string;
      held: Map<bigint, number>;
      marks: bigint[];
      laneOf: Map<string, { inbox: { id: bigint }[] }>;
      sender: { worker: Worker | undefined; start: () => Worker };
    };
    return { receiver, dispatcher, outbox, db, create, rows, stop, internals };
  }

  it('sends a backlog beyond its inbox at once, not a batch per poll', async () => {
    // Marks and polls an hour away: what goes out, goes out by the lane's own reads.
    const { receiver, create, rows, internals } = await setUp({
      inboxLimit: 2,
      markEveryMs: 3_600_000,
      pollMs: 3_600_000,
    });
    receiver.hold = true;
    await create([1]);
    await until('the first attempt', () => receiver.bodies.length === 1);
    const ids = Array.from({ length: 60 }, (_, i) => i + 2);
    await create(ids);
    // The precondition: most of them wait in the table only, beyond the inbox.
    const [lane] = internals.laneOf.values();
    expect(lane!.inbox).toHaveLength(2);
    expect(await rows()).toHaveLength(61);
    receiver.release();
    // Before: the lane read the table's front again (notices it already held, unmarked) and
    // found nothing new, then waited for the next poll (an hour here, a second in service).
    await until('every notice', () => new Set(receiver.bodies).size === 61);
    expect(receiver.bodies).toHaveLength(61); // none twice
  }, 20_000);

  it('writes the delivered marks it holds when stopped, long before the next mark is due', async () => {
    const { receiver, create, rows, stop, internals } = await setUp({ markEveryMs: 3_600_000 });
    await create([1, 2, 3]);
    // Delivered as the dispatcher knows it: the receiver's answers read, not only its requests
    // received (a stop before the answers arrive cuts the attempts: retried, not marked).
    await until('three deliveries', () => internals.marks.length === 3);
    expect(receiver.bodies).toHaveLength(3);
    // The precondition: delivered, not marked (the periodic write is an hour away).
    expect((await rows()).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
    await stop();
    expect((await rows()).map((r) => r.state)).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('holds at most inboxLimit notices in memory; the rest wait in the table, leased by nobody else, and all go out once', async () => {
    const { receiver, create, rows, internals } = await setUp({ inboxLimit: 2, leaseMs: 1_000 });
    receiver.hold = true;
    await create([1]);
    await until('the first attempt', () => receiver.bodies.length === 1);
    await create([2, 3, 4, 5, 6]); // one commit, while the lane waits for the first
    const [lane] = internals.laneOf.values();
    expect(lane!.inbox).toHaveLength(2);
    if (store.kind === 'postgres') {
      // No UPDATE gives the others back: they keep this process's lease from their INSERT
      // until it runs out (it was released at once, one statement per commit, before).
      const others = (await rows()).slice(3);
      expect(others.map((r) => r.leased_by)).toEqual([
        internals.owner,
        internals.owner,
        internals.owner,
      ]);
    }
    receiver.release();
    await until('every notice', () => new Set(receiver.bodies).size === 6);
    await until('every mark', async () => (await rows()).every((r) => r.state === 'delivered'));
    expect(receiver.bodies).toHaveLength(6); // none twice
  }, 20_000);

  it.runIf(store.kind === 'postgres')(
    'a poll leaves the notices it holds alone (no lease written again); those its inbox had no room for go out at once',
    async () => {
      // Polls every 100 ms, marks an hour away, leases of 10 s: what goes out within seconds was
      // read by a page, not found by a poll once its lease ran out.
      const { receiver, outbox, create, internals } = await setUp({
        pollMs: 100,
        markEveryMs: 3_600_000,
        inboxLimit: 2,
      });
      await create([1, 2, 3, 4, 5]);
      await until(
        'every notice, well before a lease runs out',
        () => internals.marks.length === 5,
        5_000,
      );
      expect(new Set(receiver.bodies).size).toBe(5);
      const claims = vi.spyOn(outbox, 'claim');
      // The precondition: polls while this process holds notices (delivered, not yet marked).
      await until('ten polls', () => claims.mock.calls.length >= 10);
      const held = new Set(internals.held.keys());
      expect(held.size).toBe(5);
      // Before: every poll leased the held rows again (an UPDATE of each, once a poll).
      for (const result of claims.mock.results) {
        const found = (await result.value) as { id: bigint }[];
        expect(found.filter((notice) => held.has(notice.id))).toEqual([]);
      }
      expect(receiver.bodies).toHaveLength(5); // none twice
    },
    20_000,
  );

  it.runIf(store.kind === 'postgres')(
    "a poll that takes a dead replica's newer notice still leaves the older rows its inbox had no room for to the next page, before their lease runs out",
    async () => {
      const { receiver, outbox, db, create, rows, internals } = await setUp({
        pollMs: 100,
        markEveryMs: 3_600_000,
        inboxLimit: 2,
      });
      let lastRead = Date.now();
      const read = outbox.claim.bind(outbox);
      const reads = vi.spyOn(outbox, 'claim').mockImplementation((...args) => {
        lastRead = Date.now();
        return read(...args);
      });
      receiver.hold = true;
      await create([1]);
      await until('the first attempt', () => receiver.bodies.length === 1);
      await create([2, 3, 4, 5, 6]); // one commit, while the lane waits for the first
      const [lane] = internals.laneOf.values();
      const written = await rows();
      const overflow = written.slice(3);
      // The precondition: three rows wait in the table, leased by this process's INSERT.
      expect(lane!.inbox).toHaveLength(2);
      expect(overflow.map((r) => r.leased_by)).toEqual([
        internals.owner,
        internals.owner,
        internals.owner,
      ]);
      const leaseEnds = Math.min(...overflow.map((r) => Number(r.lease_until)));
      // A notice of a replica that died holding it (its lease ran out), newer than them all.
      const receiverId = (await db.selectFrom('webhook_outbox').select('receiver').execute())[0]!
        .receiver;
      await db
        .insertInto('webhook_outbox')
        .values({
          event_id: 'msg_dead',
          receiver: receiverId,
          payload: '{"id":99,"name":"p99"}',
          state: 'pending',
          created_at: Date.now(),
          next_attempt_at: Date.now(),
          lease_until: (await databaseNow(db)) - 1,
          leased_by: 'dead-replica',
        })
        .execute();
      // The lane's next read, once it is free, is a poll (none for longer than pollMs).
      await until('a poll due', () => Date.now() - lastRead > 200);
      receiver.release();
      await until('every notice', () => new Set(receiver.bodies).size === 7, 5_000);
      // The dead replica's notice was found by a poll, which took nothing of this process's.
      const polls = reads.mock.calls
        .map((call, i) => ({
          options: call[5],
          found: reads.mock.results[i]!.value as Promise<ClaimedNotice[]>,
        }))
        .filter(({ options }) => options?.ownLeases === false);
      const pollFinds = (await Promise.all(polls.map(({ found }) => found))).flat();
      expect(pollFinds.map((notice) => notice.eventId)).toEqual(['msg_dead']);
      // The others were read by pages, not found by a poll once their lease ran out.
      expect(await databaseNow(db)).toBeLessThan(leaseEnds);
      expect(receiver.bodies).toHaveLength(7); // none twice
    },
    20_000,
  );

  it.runIf(store.kind === 'postgres')(
    "reads on after a full poll of a dead replica's notices: the next page does not lease again the rows that poll took",
    async () => {
      const { receiver, outbox, db, internals } = await setUp({
        pollMs: 3_000,
        markEveryMs: 3_600_000,
        inboxLimit: 2,
      });
      const reads = vi.spyOn(outbox, 'claim');
      const [receiverOf] = internals.laneOf.keys();
      // Six notices of a replica that died holding them: their leases ran out.
      const expired = (await databaseNow(db)) - 1;
      await db
        .insertInto('webhook_outbox')
        .values(
          [2, 3, 4, 5, 6, 7].map((id) => ({
            event_id: `msg_dead_${id}`,
            receiver: receiverOf!,
            payload: `{"id":${id},"name":"p${id}"}`,
            state: 'pending' as const,
            created_at: Date.now(),
            next_attempt_at: Date.now(),
            lease_until: expired,
            leased_by: 'dead-replica',
          })),
        )
        .execute();
      await until('every notice', () => new Set(receiver.bodies).size === 6, 10_000);
      const calls = await Promise.all(
        reads.mock.calls.map(async (call, i) => ({
          polling: call[5]?.ownLeases === false,
          found: (await (reads.mock.results[i]!.value as Promise<ClaimedNotice[]>)).map(
            (notice) => notice.id,
          ),
        })),
      );
      // The precondition: a poll took as many as the inbox had room for, and a page came next.
      const poll = calls.findIndex(({ polling, found }) => polling && found.length === 2);
      expect(poll).toBeGreaterThanOrEqual(0);
      expect(calls[poll + 1]?.polling).toBe(false);
      // Before: the page read from the table's front again and leased those two once more.
      expect(calls[poll + 1]!.found.filter((id) => calls[poll]!.found.includes(id))).toEqual([]);
      expect(receiver.bodies).toHaveLength(6); // none twice
    },
    20_000,
  );

  it.runIf(store.kind === 'postgres')(
    'keeps its leases while a notice waits or is in flight, and drops from its inbox one another replica took over',
    async () => {
      const { receiver, db, create, rows, internals } = await setUp({ leaseMs: 1_000 });
      receiver.hold = true;
      await create([1]);
      await until('the first attempt', () => receiver.bodies.length === 1);
      await create([2, 3]);
      // Until the leases the rows got at first have run out by the database's clock: renewed
      // meanwhile, so another replica's claim finds nothing.
      const first = Math.max(...(await rows()).map((r) => Number(r.lease_until)));
      await until('the first leases run out', async () => (await databaseNow(db)) > first);
      const outbox = new WebhookOutboxRepository(db, {
        database: { kind: 'postgres' },
        webhooks: { receivers: [] },
      } as unknown as AppConfig);
      const [lane] = internals.laneOf.values();
      const receiverId = (await db.selectFrom('webhook_outbox').select('receiver').execute())[0]!
        .receiver;
      expect(await outbox.claim(receiverId, 16, 60_000, 'other')).toEqual([]);
      expect(lane!.inbox).toHaveLength(2);
      // Another replica takes notice 3 over (as if this one had not reached the database).
      const third = (await rows())[2]!;
      await db
        .updateTable('webhook_outbox')
        .set({ leased_by: 'other', lease_until: Date.now() + 60_000 })
        .where('id', '=', third.id)
        .execute();
      await until('the inbox without it', () => lane!.inbox.length === 1, 5_000);
      receiver.release();
      await until('the others', () => new Set(receiver.bodies).size === 2);
      await until('their marks', async () =>
        (await rows()).slice(0, 2).every((r) => r.state === 'delivered'),
      );
      // Notice 3 is nowhere in this process any more, and the other replica still holds it.
      expect(lane!.inbox).toHaveLength(0);
      expect(internals.held.has(third.id)).toBe(false);
      expect((await rows())[2]!.leased_by).toBe('other');
      expect(receiver.bodies.some((body) => body.includes('"p3"'))).toBe(false);
    },
    20_000,
  );

  it.runIf(store.kind === 'postgres')(
    'does not send a held notice whose lease is nearly out while its renewal is stalled; sends it once renewed',
    async () => {
      const { receiver, db, create, rows, internals } = await setUp({ leaseMs: 1_000 });
      receiver.hold = true;
      await create([1]);
      await until('the first attempt', () => receiver.bodies.length === 1);
      await create([2]);
      const [lane] = internals.laneOf.values();
      expect(lane!.inbox).toHaveLength(1); // the precondition: notice 2 waits in the inbox
      const second = (await rows())[1]!;
      // A row lock stalls the renewal's UPDATE (as a slow statement or a stalled process
      // would) past the lease.
      let unlock!: () => void;
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const lock = db.transaction().execute(async (trx) => {
        await trx
          .selectFrom('webhook_outbox')
          .select('id')
          .where('id', '=', second.id)
          .forUpdate()
          .execute();
        locked();
        await new Promise<void>((resolve) => (unlock = resolve));
      });
      await isLocked;
      cleanups.push(async () => {
        unlock();
        await lock;
      });
      const estimate = () => internals.held.get(second.id) ?? Infinity;
      await until('its lease nearly out by the local estimate', () => estimate() < Date.now());
      const lanePicks = internals as unknown as { sendable?: (...args: unknown[]) => unknown[] };
      const sendable = lanePicks.sendable ? vi.spyOn(lanePicks, 'sendable') : undefined;
      receiver.release();
      // The lane, free again, looks at its inbox: notice 2 stays there, unsent (the old code
      // had no such look, and sent it).
      await until(
        'the lane to pass it over, or send it',
        () =>
          receiver.bodies.length > 1 ||
          (sendable?.mock.results.some((r) => Array.isArray(r.value) && r.value.length === 0) ??
            false),
      );
      expect(receiver.bodies.some((body) => body.includes('"p2"'))).toBe(false);
      expect(lane!.inbox).toHaveLength(1);
      unlock();
      await lock;
      await until('sent once renewed', () => receiver.bodies.some((body) => body.includes('"p2"')));
      await until('its mark', async () => (await rows())[1]!.state === 'delivered');
    },
    20_000,
  );

  it.runIf(store.kind === 'postgres')(
    'warns of failed renewals at a bounded rate while the database is down',
    async () => {
      const lines: string[] = [];
      const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
      const { receiver, outbox, db, create } = await setUp({ leaseMs: 1_000 }, log);
      receiver.hold = true;
      await create([1]);
      await until('the attempt in flight', () => receiver.bodies.length === 1);
      const renewals = vi.spyOn(outbox, 'renewLeases');
      await db.destroy(); // the database is gone
      // Renewed every leaseMs / 10: twenty failed renewals (two seconds).
      await until('twenty failed renewals', () => renewals.mock.calls.length >= 20);
      const warnings = lines.filter((line) =>
        /cannot renew leases|outbox maintenance failed/.test(line),
      );
      expect(warnings.length).toBeGreaterThan(0);
      expect(warnings.length).toBeLessThanOrEqual(2);
    },
    20_000,
  );

  it('warns of failed outbox reads at a bounded rate while the database is down', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const { outbox, db } = await setUp({ pollMs: 100 }, log);
    const claims = vi.spyOn(outbox, 'claim');
    await until('the lane reading the outbox', () => claims.mock.calls.length >= 1);
    await db.destroy(); // the database is gone
    const before = claims.mock.calls.length;
    // Read every pollMs: twenty failed reads (two seconds).
    await until('twenty failed reads', () => claims.mock.calls.length >= before + 20);
    const reads = lines.filter((line) => line.includes('cannot read the outbox'));
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.length).toBeLessThanOrEqual(2);
  }, 20_000);

  it('stops at once when the signal comes while its periodic work runs (a prune here)', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let pruning = () => {};
    const inPrune = new Promise<void>((resolve) => (pruning = resolve));
    const prune = vi
      .spyOn(WebhookOutboxRepository.prototype, 'prune')
      .mockImplementation(async () => {
        pruning();
        await released;
        return 0;
      });
    cleanups.push(() => Promise.resolve(prune.mockRestore()));
    const { stop } = await setUp({});
    await inPrune; // the precondition: the stop comes while a prune runs
    const stopping = stop();
    release();
    // Before: the prune's task slept out its 10 minutes; the abort had come before it slept.
    const bound = new Promise((resolve) => setTimeout(resolve, 5_000, 'still stopping'));
    expect(await Promise.race([stopping.then(() => 'stopped'), bound])).toBe('stopped');
  }, 20_000);

  it('gives back the notices of a sending thread that died, without charging a retry, and restarts it at most once a poll', async () => {
    const { receiver, create, rows, internals } = await setUp({ pollMs: 500 });
    receiver.hold = true;
    await create([1]);
    await until('the attempt in flight', () => receiver.bodies.length === 1);
    const start = vi.spyOn(internals.sender, 'start');
    const started = Date.now();
    // The thread dies mid-attempt, and each new one too, for two seconds.
    const kill = () => void internals.sender.worker?.terminate();
    kill();
    const killer = setInterval(kill, 5);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    clearInterval(killer);
    const elapsed = Date.now() - started;
    // Restarted at most once per poll (not in a loop), and the notice charged no retry.
    expect(start.mock.calls.length).toBeLessThanOrEqual(Math.ceil(elapsed / 500) + 1);
    expect((await rows()).map((r) => [r.state, Number(r.attempts)])).toEqual([['pending', 0]]);
    receiver.release();
    await until('sent again by a new thread', () => receiver.bodies.length >= 2);
    await until('its mark', async () => (await rows())[0]!.state === 'delivered');
    expect(Number((await rows())[0]!.attempts)).toBe(1);
  }, 20_000);
});
