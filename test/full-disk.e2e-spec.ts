import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from './support/app-process.js';
import { call, isErrorBody } from './support/http.js';
import { TEST_DATABASE_URL, postgresAvailable } from './support/postgres.js';
import { SmallDisk } from './support/small-disk.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const create = (app: RunningApp, id: number) =>
  call(`${app.apiUrl}/plants`, {
    method: 'POST',
    token: app.token,
    body: `{"id": ${id}, "name": "plant number ${id}"}`,
  });

/**
 * Creates plants until the store refuses one, then frees the disk and waits until it accepts
 * again; every acknowledged plant must still be there afterwards.
 */
async function fullThenFreed(app: RunningApp, disk: SmallDisk): Promise<number[]> {
  const acknowledged: number[] = [];
  for (let id = 1; id <= 20; id++) {
    expect((await create(app, id)).status).toBe(200);
    acknowledged.push(id);
  }
  disk.fill();
  let refused: Awaited<ReturnType<typeof create>> | undefined;
  // A store may still have room inside pages it already has: write until it has none.
  for (let id = 1000; id < 20_000 && !refused; id++) {
    const answer = await create(app, id);
    if (answer.status === 200) acknowledged.push(id);
    else refused = answer;
  }
  expect(refused?.status).toBe(503);
  expect(isErrorBody(refused!)).toBe(true);
  expect(refused!.headers.get('retry-after')).toBe('5');
  // Still full: still 503, and the process stays up.
  expect((await create(app, 30_000)).status).toBe(503);

  disk.free();
  let id = 40_000;
  await expect
    .poll(
      async () => {
        const answer = await create(app, ++id);
        if (answer.status === 200) acknowledged.push(id);
        return answer.status;
      },
      { timeout: 10_000 },
    )
    .toBe(200);
  for (const id of acknowledged) {
    expect((await call(`${app.apiUrl}/plants/${id}`, { token: app.token })).status).toBe(200);
  }
  return acknowledged;
}

describe('a full disk', () => {
  // With the webhook on, the notices ride in the plants' transaction: SQLite rolls it back by
  // itself on a full disk, and the 503 must not turn into a 500 from the ROLLBACK after it.
  it.for([
    { webhook: false, name: 'SQLite' },
    { webhook: true, name: 'SQLite with the webhook on' },
  ])(
    '$name: answers 503 while the data volume is full and recovers when it has room',
    async ({ webhook }, context) => {
      const disk = SmallDisk.mount(4);
      if (!disk) return context.skip('mounting a tmpfs needs root');
      const receiver = webhook ? await new WebhookReceiver().listen() : undefined;
      const env = receiver
        ? {
            WEBHOOK_URLS: receiver.url,
            WEBHOOK_SECRETS: receiver.secret,
            WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
          }
        : {};
      try {
        const app = await startApp({ dataDir: join(disk.dir, 'data'), env });
        try {
          const acknowledged = await fullThenFreed(app, disk);
          expect(await app.stop()).toBe(0);
          // Restarted on the same files: every 200 is there.
          const again = await startApp({
            dataDir: app.dataDir,
            env: { ...env, API_TOKENS: app.token },
          });
          for (const id of acknowledged) {
            expect((await call(`${again.apiUrl}/plants/${id}`, { token: app.token })).status).toBe(
              200,
            );
          }
          await again.stop();
        } finally {
          await app.stop();
        }
      } finally {
        await receiver?.close();
        disk.unmount();
      }
    },
  );

  // The test server runs on this machine: its database is put in a tablespace on a small disk.
  it.skipIf(!postgresAvailable)(
    'PostgreSQL: answers 503 while the tablespace is full and recovers when it has room',
    async (context) => {
      const postgresUid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const server = new URL(TEST_DATABASE_URL);
      const disk =
        server.hostname === '127.0.0.1' && postgresUid > 0
          ? SmallDisk.mount(24, `,mode=0755,uid=${postgresUid}`)
          : undefined;
      if (!disk) return context.skip('needs root and the test PostgreSQL on this machine');
      const name = `full_${process.pid}_${Date.now()}`;
      const location = join(disk.dir, 'tablespace');
      mkdirSync(location);
      chownSync(location, postgresUid, postgresUid);
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      try {
        await admin.query(`CREATE TABLESPACE ${name} LOCATION '${location}'`);
        await admin.query(`CREATE DATABASE ${name} TABLESPACE ${name}`);
        const url = new URL(TEST_DATABASE_URL);
        url.pathname = `/${name}`;
        const app = await startApp({ env: { DATABASE_URL: url.toString() } });
        try {
          await fullThenFreed(app, disk);
        } finally {
          await app.stop();
        }
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.query(`DROP TABLESPACE IF EXISTS ${name}`);
        await admin.end();
        disk.unmount();
      }
    },
  );
});
