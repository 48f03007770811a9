import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningApp, startApp, tempDir } from './support/app-process.js';
import { call, isErrorBody } from './support/http.js';
import { startOutcome } from './support/start-outcome.js';
import { withSqliteFile } from './support/sqlite-child.js';

const create = (app: RunningApp, id: number) =>
  call(`${app.apiUrl}/plants`, {
    method: 'POST',
    token: app.token,
    body: `{"id": ${id}, "name": "p${id}"}`,
  });

const health = async (app: RunningApp) => {
  const answer = await call(`${app.healthUrl}/health`);
  const details = (
    answer.json as { details?: Record<string, { status: string; message?: string }> }
  ).details;
  return { status: answer.status, database: details?.database };
};

const dbUp = async (app: RunningApp) =>
  (await call(`${app.metricsUrl}/metrics`)).text.match(/^db_up (\d)/m)?.[1];

const storeFile = (app: RunningApp) => join(app.dataDir, 'plants.sqlite');

describe('the embedded store file lost while the service runs', () => {
  const cases: { name: string; act: (file: string) => void; says: RegExp }[] = [
    {
      name: 'the data files deleted (rm plants.sqlite*)',
      act: (file) => {
        const dir = join(file, '..');
        for (const name of readdirSync(dir).filter((n) => n.startsWith('plants.sqlite')))
          rmSync(join(dir, name));
      },
      says: /database file .*plants\.sqlite was deleted/,
    },
    {
      name: 'the database file replaced by a copy of itself',
      act: (file) => {
        copyFileSync(file, `${file}.copy`);
        renameSync(`${file}.copy`, file);
      },
      says: /database file .*plants\.sqlite was replaced by another file/,
    },
    {
      name: 'both files replaced, as when a backup is put back',
      act: (file) => {
        for (const name of [file, `${file}-wal`]) {
          copyFileSync(name, `${name}.copy`);
          renameSync(`${name}.copy`, name);
        }
      },
      says: /database file .*plants\.sqlite was replaced by another file/,
    },
    {
      name: 'the WAL file deleted',
      act: (file) => rmSync(`${file}-wal`),
      says: /WAL file .*plants\.sqlite-wal was deleted/,
    },
    {
      name: 'the database file truncated in place (truncate -s 0 plants.sqlite)',
      act: (file) => truncateSync(file, 0),
      says: /database file .*plants\.sqlite was truncated .*\(0 bytes, it held \d+\)/,
    },
    {
      name: 'the WAL file truncated in place',
      act: (file) => truncateSync(`${file}-wal`, 0),
      says: /WAL file .*plants\.sqlite-wal was truncated/,
    },
    {
      name: "the WAL's header zeroed in place (same size and inode)",
      act: (file) => overwrite(`${file}-wal`, 0, Buffer.alloc(32)),
      says: /WAL file .*plants\.sqlite-wal was overwritten .*header no longer verifies/,
    },
    {
      name: "a bit flipped in the WAL's header",
      act: (file) => flipBit(`${file}-wal`, 20),
      says: /WAL file .*plants\.sqlite-wal was overwritten .*header no longer verifies/,
    },
  ];

  it.each(cases)(
    '$name: writes answer 503 from the next commit on, /health fails naming it',
    async ({ act, says }) => {
      const app = await startApp();
      try {
        for (const id of [1, 2, 3]) expect((await create(app, id)).status).toBe(200);
        act(storeFile(app));
        // No wait: the very next commit is checked before it is acknowledged.
        const answers = await Promise.all([10, 11, 12, 13].map((id) => create(app, id)));
        expect(answers.map((a) => a.status)).toEqual([503, 503, 503, 503]);
        expect(answers.every(isErrorBody)).toBe(true);
        expect(answers[0]!.text).not.toMatch(/sqlite|inode|\/tmp/i);
        expect(
          (await call(`${app.apiUrl}/plants/1`, { method: 'DELETE', token: app.token })).status,
        ).toBe(503);

        const { status, database } = await health(app);
        expect(status).toBe(503);
        expect(database?.status).toBe('down');
        expect(database?.message).toMatch(says);
        expect((await call(`${app.healthUrl}/health/ready`)).status).toBe(503);
        expect(await dbUp(app)).toBe('0');
        // The log is written asynchronously: the line may follow the answers above.
        await expect.poll(() => app.output(), { timeout: 5_000 }).toMatch(says);
        // It stays so: a restart is what brings the store back.
        expect((await create(app, 20)).status).toBe(503);
      } finally {
        await app.stop();
      }
    },
  );

  it('a truncated file is noticed by /health/ready even when no write comes', async () => {
    const app = await startApp();
    try {
      expect((await create(app, 1)).status).toBe(200);
      truncateSync(storeFile(app), 0);
      const ready = await call(`${app.healthUrl}/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.text).toMatch(/plants\.sqlite was truncated/);
    } finally {
      await app.stop();
    }
  });

  it('a write refused after the file was replaced is not there after a restart', async () => {
    const app = await startApp();
    const file = storeFile(app);
    for (const id of [1, 2, 3]) expect((await create(app, id)).status).toBe(200);
    copyFileSync(file, `${file}.copy`);
    renameSync(`${file}.copy`, file);
    expect((await create(app, 10)).status).toBe(503);
    // As a crash leaves it: the WAL stays at its path beside the copy.
    await app.stop('SIGKILL');
    const again = await startApp({ dataDir: app.dataDir, env: { API_TOKENS: app.token } });
    try {
      const read = async (id: number) =>
        (await call(`${again.apiUrl}/plants/${id}`, { token: app.token })).status;
      expect(await read(1)).toBe(200);
      expect(await read(10)).toBe(404);
    } finally {
      await again.stop();
    }
  });

  it('a deleted file is noticed by /health even when no write comes', async () => {
    const app = await startApp();
    try {
      expect((await create(app, 1)).status).toBe(200);
      rmSync(storeFile(app));
      const { status, database } = await health(app);
      expect(status).toBe(503);
      expect(database?.message).toMatch(/was deleted/);
    } finally {
      await app.stop();
    }
  });
});

function overwrite(file: string, offset: number, bytes: Buffer): void {
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    closeSync(fd);
  }
}

function flipBit(file: string, offset: number): void {
  const fd = openSync(file, 'r+');
  try {
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, offset);
    writeSync(fd, Buffer.of(byte[0]! ^ 0x04), 0, 1, offset);
  } finally {
    closeSync(fd);
  }
}

describe('a WAL damaged in place, then kill -9', () => {
  it('no write is acknowledged after the damage, and the restart refuses the WAL', async () => {
    const app = await startApp();
    const file = storeFile(app);
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    const stored = await Promise.all(ids.map((id) => create(app, id)));
    expect(stored.every((answer) => answer.status === 200)).toBe(true);
    const walSize = statSync(`${file}-wal`).size;
    overwrite(`${file}-wal`, 0, Buffer.alloc(32));
    const later = await Promise.all(ids.map((id) => create(app, 1000 + id)));
    expect(later.map((answer) => answer.status)).toEqual(later.map(() => 503));
    expect((await health(app)).database?.message).toMatch(/plants\.sqlite-wal was overwritten/);
    expect(statSync(`${file}-wal`).size).toBe(walSize);
    await app.stop('SIGKILL');

    // Started on it, SQLite would ignore the WAL and answer 404 for the 300 plants above.
    const again = await startApp({
      dataDir: app.dataDir,
      env: { API_TOKENS: app.token },
      waitForHealth: false,
    });
    expect(await startOutcome(again)).toBe(1);
    expect(again.output()).toContain(
      `the WAL file ${file}-wal is damaged (its header does not verify;`,
    );
  });
});

/**
 * 16 KiB of deterministic pseudo-random bytes (a SHA-256 chain), page-aligned at `fraction` of
 * the file. The rows were written in id order, so that part of the file holds about that part
 * of the ids.
 */
function corrupt(file: string, fraction: number): void {
  const bytes: Buffer[] = [];
  let block = createHash('sha256').update('plant-store').digest();
  for (let i = 0; i < 512; i++) {
    bytes.push(block);
    block = createHash('sha256').update(block).digest();
  }
  const pageSize = 4096;
  const offset = Math.floor((statSync(file).size * fraction) / pageSize) * pageSize;
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, Buffer.concat(bytes), 0, 16_384, offset);
  } finally {
    closeSync(fd);
  }
}

/**
 * 2M plants, a 33 MB file: twice better-sqlite3's 16 MB page cache, so after the start's
 * integrity check (which reads every page, in order) the first half of the file is no longer
 * cached and a query there reads what is on disk now.
 */
const ROWS = 2_000_000;

/** A stopped service's data folder holding ROWS plants. */
async function makeBigStore(): Promise<{ dataDir: string; token: string }> {
  const app = await startApp();
  expect((await create(app, 1)).status).toBe(200);
  expect(await app.stop()).toBe(0);
  withSqliteFile(
    join(app.dataDir, 'plants.sqlite'),
    // One statement that SQLite runs itself: the same rows as a prepared INSERT per id from
    // JavaScript, in half the CPU time (1.6 s instead of 3.2 s here).
    `db.exec(\`WITH RECURSIVE n(id) AS (SELECT 2 UNION ALL SELECT id + 1 FROM n WHERE id < ${ROWS})
       INSERT INTO plants (id, name, tag) SELECT id, 'p' || id, NULL FROM n\`);`,
  );
  return { dataDir: app.dataDir, token: app.token };
}

describe('a corrupted embedded store', () => {
  // Made once (a start and 2M inserts); each test corrupts its own copy of the folder.
  let original: { dataDir: string; token: string };
  beforeAll(async () => {
    original = await makeBigStore();
  });
  afterAll(() => {
    if (original) rmSync(original.dataDir, { recursive: true, force: true });
  });
  const bigStore = () => {
    const dataDir = tempDir('big-store');
    cpSync(original.dataDir, dataDir, { recursive: true });
    return { dataDir, token: original.token };
  };

  it('refuses to start, exit 1, naming the file', async () => {
    const { dataDir, token } = bigStore();
    corrupt(join(dataDir, 'plants.sqlite'), 0.5);
    const app = await startApp({ dataDir, env: { API_TOKENS: token }, waitForHealth: false });
    onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
    expect(await startOutcome(app)).toBe(1);
    expect(app.output()).toContain(
      `the database file ${join(dataDir, 'plants.sqlite')} is corrupt`,
    );
  });

  it('found at run time: rows answer 200 or 503, never 404 or 500, and /health fails', async () => {
    const { dataDir, token } = bigStore();
    const app = await startApp({ dataDir, env: { API_TOKENS: token } });
    onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
    try {
      expect((await call(`${app.apiUrl}/plants/1`, { token })).status).toBe(200);
      corrupt(join(dataDir, 'plants.sqlite'), 0.1);
      const ids = Array.from({ length: 2000 }, (_, i) => ROWS * 0.05 + i * 100);
      const statuses = new Map<number, number>();
      for (const id of ids) {
        const answer = await call(`${app.apiUrl}/plants/${id}`, { token });
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 503) expect(isErrorBody(answer)).toBe(true);
      }
      expect([...statuses.keys()].filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(statuses.get(503)).toBeGreaterThan(0);
      const { status, database } = await health(app);
      expect(status).toBe(503);
      expect(database?.message).toMatch(/plants\.sqlite is corrupt \(SQLITE_CORRUPT/);
    } finally {
      await app.stop();
    }
  });
});
