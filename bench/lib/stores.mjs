/** The stores behind the targets: PostgreSQL databases of our own, and bulk preloading. */
import { execFileSync } from 'node:child_process';
import Database from 'better-sqlite3';
import pg from 'pg';
import { plantId } from './ids.mjs';

/** The filesystem type of `path`, as `stat -f -c %T` prints it (tmpfs makes fsync free). */
export function fsType(path) {
  try {
    return execFileSync('stat', ['-f', '-c', '%T', path], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/**
 * The PostgreSQL server to use: BENCH_DATABASE_URL, else DATABASE_URL, else the local test
 * server of .ci/start-postgres.sh if it answers. Its databases are created and dropped here.
 */
export async function findPostgres() {
  const candidates = [
    process.env.BENCH_DATABASE_URL,
    process.env.DATABASE_URL,
    'postgres://postgres@127.0.0.1:55432/postgres',
  ].filter(Boolean);
  for (const url of candidates) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_500 });
    try {
      await client.connect();
      const setting = async (name) => (await client.query(`SHOW ${name}`)).rows[0][name];
      const info = {
        version: (await client.query('SHOW server_version')).rows[0].server_version,
        fsync: await setting('fsync'),
        synchronousCommit: await setting('synchronous_commit'),
        dataDirectory: await setting('data_directory').catch(() => undefined),
      };
      info.fsType = info.dataDirectory ? fsType(info.dataDirectory) : 'unknown';
      return { adminUrl: url, info };
    } catch {
      // not this one
    } finally {
      await client.end().catch(() => {});
    }
  }
  return undefined;
}

export function databaseUrl(adminUrl, name) {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withClient(url, work) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export function recreateDatabase(adminUrl, name) {
  return withClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
}

export function dropDatabase(adminUrl, name) {
  return withClient(adminUrl, (client) =>
    client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  );
}

/**
 * `count` plants (ids for n = 1..count, see ids.mjs: the SQL is plantId's) into a migrated PostgreSQL database, in
 * one INSERT ... SELECT from generate_series; then ANALYZE, and a CHECKPOINT so the load's
 * dirty pages are not flushed during the measurement.
 */
export function preloadPostgres(url, count, ids) {
  return withClient(url, async (client) => {
    await client.query(
      `INSERT INTO plants (id, name, tag)
       SELECT ${ids === 'sequential' ? 'g' : '((g::numeric * 5566755982691451) % 9007199254740992)::bigint'},
              'plant ' || g, 'bench'
       FROM generate_series(1, $1::int) AS g`,
      [count],
    );
    await client.query('ANALYZE plants');
    await client.query('CHECKPOINT');
    return Number((await client.query('SELECT count(*) AS n FROM plants')).rows[0].n);
  });
}

/** What preloadSqlite made with better-sqlite3, kept alive to the end (see there). */
const keptAlive = [];

/**
 * `count` plants into the service's migrated SQLite file while the service is stopped: one
 * transaction, ids sorted so both B-trees are filled in order, synchronous=OFF for the load
 * only (the service sets FULL again when it opens the file), then a WAL checkpoint.
 */
export function preloadSqlite(file, count, ids) {
  const db = new Database(file);
  // Kept for the life of this process: better-sqlite3 12 aborts Node 24.19+ when a Statement it
  // made is garbage-collected (nodejs/node#65446; src/database/statement-cache.ts), and pragma()
  // and transaction() make Statements of their own.
  keptAlive.push(db);
  try {
    db.exec('PRAGMA synchronous = OFF');
    const rows = Array.from({ length: count }, (_, i) => [plantId(i + 1, ids), i + 1]).sort(
      (a, b) => a[0] - b[0],
    );
    const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
    const countRows = db.prepare('SELECT count(*) AS n FROM plants');
    keptAlive.push(insert, countRows);
    db.exec('BEGIN');
    for (const [id, n] of rows) insert.run(BigInt(id), `plant ${n}`, 'bench');
    db.exec('COMMIT');
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return countRows.get().n;
  } finally {
    db.close();
  }
}
