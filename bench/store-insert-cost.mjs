/**
 * What the grouped INSERT of POST /plants costs the main thread, taken apart: the
 * service's statement as the repository runs it (Kysely's executeQuery of the INSERT compiled
 * once per row count: `INSERT ... VALUES (?,?,?) x n ON CONFLICT (id) DO NOTHING RETURNING id`,
 * bigint ids) against nest-floor's store code (bench/baselines/raw-server.mjs), and variants
 * that each drop one part: Kysely (the driver called directly), RETURNING, ON CONFLICT, the
 * safe-integer read, the schema, the prepared statement (PostgreSQL), the compile-once.
 *
 * No HTTP: one process writes batches of `--batch` plants (random ids over the int64 range, as
 * the bench's load does), one batch after the other, each variant on a store of its own,
 * variants interleaved round by round; the figure is this thread's CPU (user + system, which
 * includes the fsync's kernel work) per plant, median over rounds. Same durability as the
 * service: WAL, synchronous=FULL, exclusive lock; PostgreSQL with its fsync on.
 *
 *   node bench/store-insert-cost.mjs [--rounds 5] [--batches 200] [--batch 16] [--stores sqlite,pg] [--sync off]
 *   --sync off: SQLite without fsync (synchronous=OFF), to see the statements' own CPU apart
 *   from the commit's kernel work, which both sides pay alike.
 *   pg uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped at the end).
 *   Runs on Node 24 (as `npm run bench` runs its targets) unless --node current.
 *   Writes results/store-insert-cost.md.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { targetNode } from './lib/node-runtime.mjs';
import { BENCH, ROOT } from './lib/paths.mjs';
import { dataParent, linkModules } from './lib/workspace.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    batches: { type: 'string', default: '200' },
    batch: { type: 'string', default: '16' },
    stores: { type: 'string', default: 'sqlite,pg' },
    node: { type: 'string', default: '24' },
    sync: { type: 'string', default: 'full' },
  },
});

// Run under the targets' Node, with the better-sqlite3 built for it.
if (values.node !== 'current' && !process.env.STORE_COST_CHILD) {
  const node = targetNode(values.node);
  // As the bench's build copies: the checkout's packages, better-sqlite3 built for that Node.
  const modules = mkdtempSync(join(dataParent(), 'plantbench-store-cost-modules-'));
  if (node.sqlitePackage) linkModules(join(modules, 'node_modules'), node.sqlitePackage);
  const sqlite = node.sqlitePackage ? join(modules, 'node_modules/better-sqlite3') : '';
  const args = [
    ...process.argv.slice(2).filter((a) => !a.startsWith('--node')),
    '--node',
    'current',
  ];
  const child = spawnSync(node.path, [import.meta.filename, ...args], {
    stdio: 'inherit',
    env: { ...process.env, STORE_COST_CHILD: '1', STORE_COST_SQLITE: sqlite },
  });
  rmSync(modules, { recursive: true, force: true });
  process.exit(child.status ?? 1);
}

const require = createRequire(import.meta.url);
const Database = require(process.env.STORE_COST_SQLITE || 'better-sqlite3');
// The service's own statement cache (the build in dist/), as openSqlite wraps the database.
const { StatementCachingDatabase } = await import(join(ROOT, 'dist/database/statement-cache.js'));

const rounds = Number(values.rounds);
const batches = Number(values.batches);
const batchSize = Number(values.batch);
const stores = values.stores.split(',');
const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;

const cpuNow = () => {
  const usage = process.threadCpuUsage ? process.threadCpuUsage() : process.cpuUsage();
  return usage.user + usage.system;
};

function newPlants(n) {
  const bytes = randomBytes(8 * n);
  return Array.from({ length: n }, (_, i) => ({
    id: bytes.readBigUInt64BE(8 * i) >> 1n || 1n,
    name: 'Monstera deliciosa',
    tag: i % 2 ? 'indoor' : undefined,
  }));
}

const params = (plants) => plants.flatMap((p) => [p.id, p.name, p.tag ?? null]);
const outcomes = (plants, created) =>
  plants.map((p) => (created.has(p.id) ? 'created' : 'duplicate'));

// The repository's compiled INSERT (plants.repository.ts insertQueryFor).
function compileInsert(db, count) {
  const placeholder = { id: 0n, name: '', tag: null };
  return db
    .insertInto('plants')
    .values(Array.from({ length: count }, () => placeholder))
    .onConflict((conflict) => conflict.column('id').doNothing())
    .returning('id')
    .compile();
}

const SERVICE_TABLE = // the migration's SQLite table: INTEGER PRIMARY KEY is the rowid
  'CREATE TABLE plants ("id" integer not null primary key, "name" text not null, "tag" text)';
const FLOOR_TABLE = // raw-server.mjs's: bigint primary key, a separate index on SQLite
  'CREATE TABLE plants ("id" bigint not null primary key, "name" text not null, "tag" text)';

function openSqliteFile(dir, name, table) {
  const db = new Database(join(dir, `${name}.sqlite`));
  db.defaultSafeIntegers(true);
  db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA busy_timeout = 0;');
  db.exec('PRAGMA journal_mode = WAL;');
  db.exec('BEGIN IMMEDIATE; COMMIT;');
  db.exec(
    `PRAGMA synchronous = ${values.sync === 'off' ? 'OFF' : 'FULL'}; PRAGMA foreign_keys = ON;`,
  );
  db.exec(table);
  return db;
}

/** Each variant: a name, what it drops, and an async insertBatch(plants) -> outcomes. */
function sqliteVariants(dir) {
  const variants = [];
  const add = (name, note, make) => variants.push({ name, note, ...make() });

  const floor = (table) => () => {
    const db = openSqliteFile(dir, `floor-${table === FLOOR_TABLE ? 'index' : 'rowid'}`, table);
    const one = db.prepare(
      'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id',
    );
    const outcome = (p) => (one.get(p.id, p.name, p.tag ?? null) ? 'created' : 'duplicate');
    const many = db.transaction((plants) => plants.map(outcome));
    return { insert: async (plants) => many(plants), close: () => db.close() };
  };
  add(
    'nest-floor',
    'raw-server.mjs: one prepared statement per row in db.transaction, bigint key + index',
    floor(FLOOR_TABLE),
  );
  add(
    'floor on the rowid table',
    "the same, on the service's table (INTEGER PRIMARY KEY)",
    floor(SERVICE_TABLE),
  );

  const kyselyOn = (name, compileEach) => () => {
    const raw = openSqliteFile(dir, name, SERVICE_TABLE);
    const db = new Kysely({
      dialect: new SqliteDialect({ database: new StatementCachingDatabase(raw) }),
    });
    return { ...kyselyInserter(db, compileEach), close: () => db.destroy() };
  };
  add(
    'service',
    "the repository's path: Kysely executeQuery of the INSERT compiled once per row count",
    kyselyOn('service', false),
  );
  add(
    'service, compiled per batch',
    'what compile-once saves: Kysely builds and compiles the INSERT each time',
    kyselyOn('compile-each', true),
  );

  const direct =
    (name, { sql: transform = (s) => s, safe = true, read = 'all' } = {}) =>
    () => {
      const raw = openSqliteFile(dir, name, SERVICE_TABLE);
      const kysely = new Kysely({ dialect: new SqliteDialect({ database: raw }) });
      const cache = new StatementCachingDatabase(raw);
      const statements = new Map();
      const statementFor = (n) => {
        let statement = statements.get(n);
        if (!statement) {
          statement = cache.prepare(transform(compileInsert(kysely, n).sql));
          if (!safe) statement.safeIntegers(false);
          statements.set(n, statement);
        }
        return statement;
      };
      return {
        async insert(plants) {
          const statement = statementFor(plants.length);
          if (read === 'run') {
            statement.run(params(plants));
            return plants.map(() => 'created');
          }
          const rows = statement.all(params(plants));
          return outcomes(plants, new Set(rows.map((row) => BigInt(row.id))));
        },
        close: () => raw.close(),
      };
    };
  add(
    'driver',
    'the same statement through the statement cache, no Kysely executor',
    direct('driver'),
  );
  add(
    'driver, ids as numbers',
    'safeIntegers(false) on the statement: RETURNING ids as doubles (rounds ids > 2^53)',
    direct('unsafe', { safe: false }),
  );
  add(
    'driver, no RETURNING',
    'run() without RETURNING: no row read back (cannot tell a duplicate)',
    direct('no-returning', { sql: (s) => s.replace(/ returning .*$/i, ''), read: 'run' }),
  );
  add(
    'driver, no ON CONFLICT',
    'plain INSERT ... RETURNING (a duplicate would fail the batch)',
    direct('no-conflict', { sql: (s) => s.replace(/ on conflict .* do nothing/i, '') }),
  );
  variants.push({
    name: 'parameters only',
    note: 'plants.flatMap to the 3 x n parameter array, and the outcomes from a Set: no database',
    insert: async (plants) =>
      outcomes(plants, new Set(params(plants).filter((_, i) => i % 3 === 0))),
    close: () => undefined,
  });
  return variants;
}

async function pgVariants(schema) {
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, (value) => BigInt(value));
  const pools = [];
  const newPool = async (name, options = {}) => {
    const pool = new pg.Pool({
      connectionString: pgUrl,
      types: options.stringIds ? undefined : types,
      max: 2,
      options: `-c search_path=${schema}_${name}`,
    });
    await pool.query(`CREATE SCHEMA ${schema}_${name}`);
    await pool.query(
      `CREATE TABLE ${schema}_${name}.plants ("id" bigint not null primary key, "name" text not null, "tag" text)`,
    );
    pools.push({ pool, name });
    return pool;
  };
  const variants = [];
  const add = async (name, note, make) => variants.push({ name, note, ...(await make()) });

  await add(
    'nest-floor',
    'raw-server.mjs: the INSERT text built per batch, pool.query',
    async () => {
      const pool = await newPool('floor');
      return {
        async insert(plants) {
          const placeholders = plants.map(
            (_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`,
          );
          const { rows } = await pool.query(
            `INSERT INTO plants (id, name, tag) VALUES ${placeholders.join(', ')} ON CONFLICT (id) DO NOTHING RETURNING id`,
            params(plants),
          );
          return outcomes(plants, new Set(rows.map((row) => row.id)));
        },
      };
    },
  );
  const kyselyOn = (name, compileEach) => async () => {
    const db = new Kysely({ dialect: new PostgresDialect({ pool: await newPool(name) }) });
    return kyselyInserter(db, compileEach);
  };
  await add(
    'service',
    "the repository's path: Kysely executeQuery of the INSERT compiled once per row count",
    kyselyOn('service', false),
  );
  await add(
    'service, compiled per batch',
    'Kysely builds and compiles the INSERT each time',
    kyselyOn('compileeach', true),
  );
  const direct =
    (name, { sql: transform = (s) => s, prepared = false, stringIds = false, read = true } = {}) =>
    async () => {
      const pool = await newPool(name, { stringIds });
      const kysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
      const sqlFor = new Map();
      return {
        async insert(plants) {
          let text = sqlFor.get(plants.length);
          if (!text)
            sqlFor.set(plants.length, (text = transform(compileInsert(kysely, plants.length).sql)));
          const query = prepared
            ? { name: `plants_insert_${plants.length}`, text, values: params(plants) }
            : { text, values: params(plants) };
          const { rows } = await pool.query(query);
          if (!read) return plants.map(() => 'created');
          return outcomes(plants, new Set(rows.map((row) => BigInt(row.id))));
        },
      };
    };
  await add('driver', 'the compiled text through pool.query, no Kysely executor', direct('driver'));
  await add(
    'driver, named prepared statement',
    'pool.query({name, text}): parsed and planned once per row count per connection',
    direct('prepared', { prepared: true }),
  );
  await add(
    'driver, ids as strings',
    "pg's default int8 parser (strings) instead of BigInt",
    direct('strings', { stringIds: true }),
  );
  await add(
    'driver, no RETURNING',
    'no row read back (cannot tell a duplicate)',
    direct('noreturning', { sql: (s) => s.replace(/ returning .*$/i, ''), read: false }),
  );
  await add(
    'driver, no ON CONFLICT',
    'plain INSERT ... RETURNING',
    direct('noconflict', { sql: (s) => s.replace(/ on conflict .* do nothing/i, '') }),
  );
  const close = async () => {
    for (const { pool, name } of pools) {
      await pool.query(`DROP SCHEMA ${schema}_${name} CASCADE`).catch(() => undefined);
      await pool.end();
    }
  };
  return { variants, close };
}

async function measure(variants) {
  const perRound = new Map(variants.map((v) => [v.name, []]));
  const wall = new Map(variants.map((v) => [v.name, []]));
  // Warm-up: every variant's code paths compiled by V8 before the first measured round.
  for (const v of variants) for (let i = 0; i < 20; i++) await v.insert(newPlants(batchSize));
  for (let round = 0; round < rounds; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length]);
    for (const v of order) {
      const work = Array.from({ length: batches }, () => newPlants(batchSize));
      const start = cpuNow();
      const started = process.hrtime.bigint();
      for (const plants of work) {
        const result = await v.insert(plants);
        if (result.length !== plants.length)
          throw new Error(`${v.name}: ${result.length} outcomes`);
      }
      const cpu = cpuNow() - start;
      perRound.get(v.name).push(cpu / (batches * batchSize));
      wall.get(v.name).push(Number(process.hrtime.bigint() - started) / 1e6 / batches);
    }
  }
  return variants.map((v) => ({
    name: v.name,
    note: v.note,
    us: median(perRound.get(v.name)),
    rounds: perRound.get(v.name),
    msPerBatch: median(wall.get(v.name)),
  }));
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function table(title, rows) {
  const base = rows.find((r) => r.name === 'nest-floor').us;
  const lines = [
    `### ${title}`,
    '',
    '| variant | CPU us per plant (median) | vs nest-floor | rounds | ms per batch | what it is |',
    '| --- | ---: | ---: | --- | ---: | --- |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.us.toFixed(1)} | ${r.name === 'nest-floor' ? '' : `${r.us - base >= 0 ? '+' : ''}${(r.us - base).toFixed(1)}`} | ${r.rounds.map((x) => x.toFixed(0)).join(' ')} | ${r.msPerBatch.toFixed(2)} | ${r.note} |`,
    );
  }
  return lines.join('\n');
}

const sections = [];
const load = [loadavg()[0].toFixed(2)];
if (stores.includes('sqlite')) {
  const dir = mkdtempSync(join(dataParent(), 'plantbench-store-cost-'));
  const variants = sqliteVariants(dir);
  try {
    sections.push(
      table(
        `SQLite (WAL, synchronous=${values.sync === 'off' ? "OFF: no fsync, the statements' own CPU" : 'FULL'}, exclusive lock, safe integers)`,
        await measure(variants),
      ),
    );
  } finally {
    for (const v of variants) v.close();
    rmSync(dir, { recursive: true, force: true });
  }
  load.push(loadavg()[0].toFixed(2));
}
if (stores.includes('pg')) {
  if (!pgUrl) {
    console.log('no BENCH_DATABASE_URL / TEST_DATABASE_URL: PostgreSQL skipped');
  } else {
    const { variants, close } = await pgVariants(`store_cost_${process.pid}`);
    try {
      sections.push(table('PostgreSQL (pg pool, int8 as BigInt)', await measure(variants)));
    } finally {
      await close();
    }
    load.push(loadavg()[0].toFixed(2));
  }
}
const header = [
  '# The grouped INSERT taken apart (`bench/store-insert-cost.mjs`)',
  '',
  `${new Date().toISOString()}, Node ${process.version}, ${rounds} rounds of ${batches} batches of ${batchSize} plants, one batch at a time; load average ${load.join(' -> ')}. Main-thread CPU (user + system) per plant.`,
  '',
].join('\n');
const text = `${header}\n${sections.join('\n\n')}\n`;
writeFileSync(join(BENCH, 'results/store-insert-cost.md'), text);
console.log(text);

/** Kysely's executeQuery of the INSERT, compiled per batch or once per row count. */
function kyselyInserter(db, compileEach) {
  const compiled = new Map();
  return {
    async insert(plants) {
      let query = compileEach ? compileInsert(db, plants.length) : compiled.get(plants.length);
      if (!query) compiled.set(plants.length, (query = compileInsert(db, plants.length)));
      const { rows } = await db.executeQuery({ ...query, parameters: params(plants) });
      return outcomes(plants, new Set(rows.map((row) => BigInt(row.id))));
    },
  };
}
