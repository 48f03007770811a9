/**
 * The raw baselines: a minimal `node:http` server doing the service's job for POST /plants and
 * GET /plants/{id} (bearer check, 64 KiB JSON body parsed losslessly, the same validation, the
 * same schema and INSERT on the same store), with nothing else: no framework, no logging, no
 * metrics. `raw-each.mjs` commits once per request; `raw-group.mjs` group-commits.
 *
 * Environment: HOST, PORT, API_TOKENS, and DATA_DIR (SQLite, WAL + synchronous=FULL, exclusive
 * lock, as the service) or DATABASE_URL (PostgreSQL through `pg`, a pool of 10 as the service).
 * GET /health answers 200 once the store is open.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { setImmediate } from 'node:timers';
import Database from 'better-sqlite3';
import { isInteger, isSafeNumber, parse, stringify } from 'lossless-json';
import pg from 'pg';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const MAX_BODY_BYTES = 64 * 1024;
const NAME_MAX = 256;
const TAG_MAX = 64;
const MAX_BATCH = 500;
const KNOWN_KEYS = new Set(['id', 'name', 'tag']);
/** The service's migration creates exactly this table (Kysely's `bigint` primary key). */
const CREATE_TABLE =
  'CREATE TABLE IF NOT EXISTS "plants" ("id" bigint not null primary key, "name" text not null, "tag" text)';
const INSERT_ONE =
  'INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id';

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** @param {{ group: boolean }} options */
export async function startRawServer({ group }) {
  const env = process.env;
  const digests = (env.API_TOKENS ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => (t.startsWith('sha256:') ? Buffer.from(t.slice(7), 'hex') : sha256(t)));
  const store = env.DATABASE_URL
    ? await openPostgres(env.DATABASE_URL)
    : openSqlite(join(env.DATA_DIR ?? './data', 'plants.sqlite'));
  const insert = group
    ? groupCommit(store.insertBatch, store.concurrency)
    : (plant) => store.insertOne(plant);

  const server = createServer((request, response) => {
    handle(request, response).catch((error) => {
      const status = error instanceof HttpError ? error.status : 500;
      if (status === 500) process.stderr.write(`${error?.stack ?? error}\n`);
      send(response, status, { error: status, message: error.message });
    });
  });

  async function handle(request, response) {
    const url = request.url ?? '/';
    if (url === '/health') return send(response, 200, { status: 'ok' });
    if (!url.startsWith('/plants')) throw new HttpError(404, `Cannot ${request.method} ${url}`);
    authenticate(request.headers.authorization, digests);
    if (url === '/plants' && request.method === 'POST') {
      const plant = validate(parseJson(await readBody(request)));
      if ((await insert(plant)) === 'duplicate') {
        throw new HttpError(409, `a plant with id ${plant.id} already exists`);
      }
      return send(
        response,
        200,
        plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag },
      );
    }
    const match = /^\/plants\/([^/?]+)$/.exec(url);
    if (match && request.method === 'GET') {
      const id = parseInt64(match[1]);
      if (id === undefined) throw new HttpError(400, 'id must be an int64');
      const row = await store.get(id);
      if (!row) throw new HttpError(404, `no plant with id ${id}`);
      return send(
        response,
        200,
        row.tag === null
          ? { id: row.id, name: row.name }
          : { id: row.id, name: row.name, tag: row.tag },
      );
    }
    throw new HttpError(404, `Cannot ${request.method} ${url}`);
  }

  await new Promise((resolve) =>
    server.listen(Number(env.PORT ?? 3000), env.HOST ?? '127.0.0.1', resolve),
  );
  const stop = () => server.close(() => store.close().then(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function sha256(text) {
  return createHash('sha256').update(text, 'utf8').digest();
}

function authenticate(header, digests) {
  const match = /^Bearer ([^\s]+)$/i.exec(header ?? '');
  if (!match) throw new HttpError(401, 'authentication required');
  const presented = sha256(match[1]);
  let ok = false;
  for (const digest of digests) ok = timingSafeEqual(presented, digest) || ok;
  if (!ok) throw new HttpError(401, 'the bearer token is not valid');
}

function readBody(request) {
  const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[^/]+\+json$/.test(type)) {
    request.resume();
    return Promise.reject(new HttpError(415, 'the request body must be application/json'));
  }
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, 'the request body must be at most 64 KiB'));
        request.destroy();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** The service's lossless rule: unsafe integer literals become bigint, others stay numbers. */
function parseJson(text) {
  try {
    return parse(text, null, (digits) => {
      if (isInteger(digits)) return isSafeNumber(digits) ? Number(digits) : BigInt(digits);
      const value = Number(digits);
      return Number.isInteger(value) && !Number.isSafeInteger(value) ? Number.NaN : value;
    });
  } catch (error) {
    throw new HttpError(400, `the request body is not valid JSON: ${error.message}`);
  }
}

function toInt64(value) {
  if (typeof value === 'bigint')
    return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return undefined;
}

function parseInt64(text) {
  if (!/^-?(0|[1-9][0-9]*)$/.test(text) || text.length > 20) return undefined;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
}

/** The NewPlant rules, one message per field, all fields at once. */
function validate(body) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'the request body must be a JSON object');
  }
  const unknown = Object.keys(body).filter((key) => !KNOWN_KEYS.has(key));
  if (unknown.length > 0) {
    throw new HttpError(400, unknown.map((key) => `property ${key} should not exist`).join('; '));
  }
  const problems = [];
  const id = toInt64(body.id);
  if (body.id === undefined) problems.push('id is required');
  else if (id === undefined) problems.push('id must be an int64');
  if (body.name === undefined) problems.push('name is required');
  else if (typeof body.name !== 'string') problems.push('name must be a string');
  else if (body.name.length < 1) problems.push('name must be at least 1 character');
  else if (body.name.length > NAME_MAX)
    problems.push(`name must be at most ${NAME_MAX} characters`);
  if (body.tag !== undefined) {
    if (typeof body.tag !== 'string') problems.push('tag must be a string');
    else if (body.tag.length > TAG_MAX) problems.push(`tag must be at most ${TAG_MAX} characters`);
  }
  if (problems.length > 0) throw new HttpError(400, problems.join('; '));
  return { id, name: body.name, tag: body.tag };
}

function send(response, status, body) {
  if (response.headersSent) return;
  const text = stringify(body) ?? 'null';
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  response.end(text);
}

/**
 * Group commit: inserts queued while the loop was busy are flushed together in one
 * transaction; a key already in the batch waits for the next one, so a duplicate is still
 * decided by the primary key and answered 409 on its own.
 */
export function groupCommit(insertBatch, concurrency) {
  let queue = [];
  let inFlight = 0;
  let scheduled = false;
  const schedule = () => {
    if (scheduled || inFlight >= concurrency || queue.length === 0) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flush();
    });
  };
  const flush = () => {
    if (inFlight >= concurrency || queue.length === 0) return;
    const batch = [];
    const rest = [];
    const keys = new Set();
    for (const pending of queue) {
      if (batch.length < MAX_BATCH && !keys.has(pending.plant.id)) {
        keys.add(pending.plant.id);
        batch.push(pending);
      } else rest.push(pending);
    }
    queue = rest;
    inFlight++;
    insertBatch(batch.map((p) => p.plant))
      .then(
        (outcomes) => batch.forEach((p, i) => p.resolve(outcomes[i])),
        (error) => batch.forEach((p) => p.reject(error)),
      )
      .finally(() => {
        inFlight--;
        schedule();
      });
    schedule();
  };
  return (plant) =>
    new Promise((resolve, reject) => {
      queue.push({ plant, resolve, reject });
      schedule();
    });
}

/** The service's SQLite settings: WAL, synchronous=FULL, exclusive lock, int64 as bigint. */
export function openSqlite(file) {
  mkdirSync(join(file, '..'), { recursive: true });
  const db = new Database(file);
  db.defaultSafeIntegers(true);
  // exec, not pragma(): pragma() makes a throwaway Statement, and better-sqlite3 12 aborts Node
  // 24.19+ when one is garbage-collected (nodejs/node#65446).
  db.exec('PRAGMA locking_mode = EXCLUSIVE');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('BEGIN IMMEDIATE; COMMIT;');
  db.exec('PRAGMA synchronous = FULL');
  db.exec(CREATE_TABLE);
  const insertOne = db.prepare(INSERT_ONE.replace(/\$\d/g, '?'));
  const select = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?');
  const outcome = (p) => (insertOne.get(p.id, p.name, p.tag ?? null) ? 'created' : 'duplicate');
  const insertMany = db.transaction((plants) => plants.map(outcome));
  return {
    concurrency: 1,
    insertOne: async (plant) => outcome(plant),
    insertBatch: async (plants) => insertMany(plants),
    get: async (id) => select.get(id),
    close: async () => db.close(),
  };
}

export async function openPostgres(url) {
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, (value) => BigInt(value));
  const pool = new pg.Pool({ connectionString: url, types, max: 10 });
  await pool.query(CREATE_TABLE);
  return {
    // As the service: several batches commit in parallel on the pool.
    concurrency: 4,
    insertOne: async (p) =>
      (await pool.query(INSERT_ONE, [p.id, p.name, p.tag ?? null])).rowCount
        ? 'created'
        : 'duplicate',
    insertBatch: async (plants) => {
      const values = plants.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`);
      const { rows } = await pool.query(
        `INSERT INTO plants (id, name, tag) VALUES ${values.join(', ')} ON CONFLICT (id) DO NOTHING RETURNING id`,
        plants.flatMap((p) => [p.id, p.name, p.tag ?? null]),
      );
      const created = new Set(rows.map((row) => row.id));
      return plants.map((p) => (created.has(p.id) ? 'created' : 'duplicate'));
    },
    get: async (id) =>
      (await pool.query('SELECT id, name, tag FROM plants WHERE id = $1', [id])).rows[0],
    close: () => pool.end(),
  };
}
