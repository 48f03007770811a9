import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAvailable } from '../../test/support/postgres.js';
import { parseWebhookReceivers } from '../config/webhook-receivers.js';
import { migrateToLatest } from './migrate.js';
import { openPostgres } from './postgres.connection.js';
import { keyReceiverIds } from './receiver-ids.js';
import { openSqlite } from './sqlite.connection.js';

const logger = pino({ level: 'silent' });
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const URLS = [
  'https://hooks.example.com/services/T0/B0/token1',
  'https://a:winter2026@b.example/x',
];
const unkeyed = (url: string) => createHash('sha256').update(url).digest('hex').slice(0, 16);

const stores = [
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'receiver-ids-'));
    return Promise.resolve(openSqlite(join(dir, 'p.sqlite'), dir).db);
  },
  ...(postgresAvailable
    ? [async () => openPostgres({ url: await createTestDatabase(), logger })]
    : []),
];

describe.each(stores)('keyReceiverIds on store %#', (open) => {
  const receivers = () => parseWebhookReceivers(URLS.join(','), `${secret},${secret}`).receivers;

  it('gives ids that are no digest of the URL, the same at every start on one store', async () => {
    const db = await open();
    await migrateToLatest(db, logger);
    const [first, again] = [receivers(), receivers()];
    await keyReceiverIds(db, first);
    await keyReceiverIds(db, again);
    expect(first.map((r) => r.id)).toEqual(again.map((r) => r.id));
    expect(first.map((r) => r.id)).not.toContain(unkeyed(URLS[0]!));
    expect(new Set(first.map((r) => r.id)).size).toBe(2);
    await db.destroy();
  });

  it("moves an earlier version's notices and 410 stops to the keyed id", async () => {
    const db = await open();
    await migrateToLatest(db, logger);
    const [a, b] = receivers() as [
      ReturnType<typeof receivers>[0],
      ReturnType<typeof receivers>[0],
    ];
    const old = URLS.map(unkeyed);
    const notice = {
      event_id: 'e',
      payload: '{}',
      state: 'pending' as const,
      created_at: 1,
      next_attempt_at: 1,
    };
    await db
      .insertInto('webhook_outbox')
      .values(old.map((receiver) => ({ ...notice, receiver })))
      .execute();
    const stop = { host: 'b.example', stopped_at: 1, reason: '410 Gone' };
    await db
      .insertInto('webhook_receivers')
      .values({ ...stop, receiver: old[1]! })
      .execute();
    await keyReceiverIds(db, [a, b]);
    const outbox = await db.selectFrom('webhook_outbox').select('receiver').execute();
    expect(outbox.map((row) => row.receiver).sort()).toEqual([a.id, b.id].sort());
    const stops = await db.selectFrom('webhook_receivers').select('receiver').execute();
    expect(stops.map((row) => row.receiver)).toEqual([b.id]);
    await db.destroy();
  });
});
