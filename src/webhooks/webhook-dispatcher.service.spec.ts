import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { Kysely } from 'kysely';
import { pino } from 'pino';
import { Counter, Gauge, Histogram } from 'prom-client';
import ts from 'typescript';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
import { WebhookOutboxRepository } from './webhook-outbox.repository.js';

/**
 * The dispatcher in this process against a real database, a real sending thread and a real
 * HTTP receiver on loopback, with intervals shortened through its test-only timing option.
 */
const logger = pino({ level: 'silent' });
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** The sending thread built from the sources (vitest runs TypeScript; a Worker cannot). */
const senderUrl = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-sender-'));
  for (const name of ['webhook-sender.worker', 'webhook-http', 'webhook-signature']) {
    const source = readFileSync(new URL(`./${name}.ts`, import.meta.url), 'utf8');
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    writeFileSync(join(dir, `${name}.js`), outputText);
  }
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  return pathToFileURL(join(dir, 'webhook-sender.worker.js'));
})();

const stores = [
  {
    kind: 'sqlite' as const,
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'dispatcher-'));
      mkdirSync(dir, { recursive: true });
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
  private held: ServerResponse[] = [];
  private server: Server | undefined;

  async listen(): Promise<string> {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        this.bodies.push(body);
        if (this.hold) this.held.push(response);
        else response.writeHead(204).end();
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

describe.each(stores)('the webhook dispatcher on $kind', (store) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp(timing: Partial<WebhookDispatcherTiming>) {
    const receiver = new Receiver();
    const url = await receiver.listen();
    cleanups.push(() => receiver.close());
    const db: Kysely<Database> = await store.open();
    cleanups.push(() => db.destroy());
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
      logger,
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
        .select(['id', 'state', 'attempts', 'leased_by', 'payload'])
        .orderBy('id')
        .execute();
    const internals = dispatcher as unknown as {
      owner: string;
      laneOf: Map<string, { inbox: unknown[] }>;
      sender: { worker: Worker | undefined; start: () => Worker };
    };
    return { receiver, dispatcher, db, create, rows, stop, internals };
  }

  it('writes the delivered marks it holds when stopped, long before the next mark is due', async () => {
    const { receiver, create, rows, stop } = await setUp({ markEveryMs: 3_600_000 });
    await create([1, 2, 3]);
    await until('three deliveries', () => receiver.bodies.length === 3);
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
    'keeps its leases while a notice waits or is in flight, and drops from its inbox one another replica took over',
    async () => {
      const { receiver, db, create, rows, internals } = await setUp({ leaseMs: 1_000 });
      receiver.hold = true;
      await create([1]);
      await until('the first attempt', () => receiver.bodies.length === 1);
      await create([2, 3]);
      // Three leases' time: renewed, so another replica's claim finds nothing.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
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
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.bodies.some((body) => body.includes('"p3"'))).toBe(false);
    },
    20_000,
  );

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
