/**
 * A preload (`--import`) that measures the SQLite group commit inside a running target, the
 * service or nest-floor, under the bench's own load: rows per commit, and the main
 * thread's wall time inside each commit (the statement, its fsync) and the part of it spent
 * waiting on a run queue after the fsync (schedstat's run_delay). PostgreSQL: INSERTs and rows.
 *
 *   npm run bench -- --preload 0 --stores sqlite --scenarios post-c16 --baselines nest-floor \
 *     "--node-options=--max-semi-space-size=16 --import $PWD/bench/lib/commit-probe.mjs"
 *   then: node bench/lib/commit-probe.mjs   (prints what each target wrote)
 *
 * Each target writes <COMMIT_PROBE_DIR or $TMPDIR/plant-commit-probe>/<pid>-<script>.json
 * twice a second. A commit is the service's INSERT run outside a transaction (autocommit, one
 * per batch) or one call of nest-floor's `db.transaction` function. Linux only (/proc).
 * CPU time cannot be read here: the kernel updates a running thread's CPU counters lazily, so
 * sub-millisecond differences of getrusage or schedstat are wrong; bench/store-insert-cost.mjs
 * measures the statements' CPU apart.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setInterval } from 'node:timers';

const dir = process.env.COMMIT_PROBE_DIR ?? join(tmpdir(), 'plant-commit-probe');

if (import.meta.filename === process.argv[1]) {
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const c = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    const line = c.commits
      ? `${(c.insertRows / c.commits).toFixed(1)} rows per commit, ${c.commits} commits, ` +
        `${(c.wallUs / c.commits).toFixed(0)} us per commit (${(c.wallUs / c.insertRows).toFixed(1)} per row), ` +
        `of it waiting on a run queue ${(c.runDelayUs / c.commits).toFixed(0)} us (${(c.runDelayUs / c.insertRows).toFixed(1)} per row)`
      : `${(c.pgRows / c.pgInserts).toFixed(1)} rows per INSERT, ${c.pgInserts} INSERTs`;
    console.log(`${file}: ${line}`);
  }
} else {
  probe();
}

function probe() {
  mkdirSync(dir, { recursive: true });
  const require = createRequire(process.argv[1]);
  const c = {
    insertCalls: 0,
    insertRows: 0,
    commits: 0,
    wallUs: 0,
    runDelayUs: 0,
    pgInserts: 0,
    pgRows: 0,
  };
  const isInsert = (sql) => typeof sql === 'string' && /^\s*insert into "?plants"?/i.test(sql);
  const runDelayUs = () =>
    Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[1]) / 1000;
  const timed = (fn, self, args) => {
    const wall = process.hrtime.bigint();
    const delay = runDelayUs();
    try {
      return fn.apply(self, args);
    } finally {
      c.commits++;
      c.runDelayUs += runDelayUs() - delay;
      c.wallUs += Number(process.hrtime.bigint() - wall) / 1000;
    }
  };
  try {
    const Database = require('better-sqlite3');
    const prepare = Database.prototype.prepare;
    let patched = false;
    Database.prototype.prepare = function (...args) {
      const statement = prepare.apply(this, args);
      if (!patched) {
        patched = true;
        const proto = Object.getPrototypeOf(statement);
        for (const method of ['all', 'get', 'run']) {
          const original = proto[method];
          proto[method] = function (...params) {
            if (!isInsert(this.source)) return original.apply(this, params);
            c.insertCalls++;
            c.insertRows += Array.isArray(params[0]) ? params[0].length / 3 : 1;
            return this.database.inTransaction
              ? original.apply(this, params)
              : timed(original, this, params);
          };
        }
      }
      return statement;
    };
    const transaction = Database.prototype.transaction;
    Database.prototype.transaction = function (fn) {
      const run = transaction.call(this, fn);
      return function (...args) {
        return timed(run, this, args);
      };
    };
  } catch {
    // no better-sqlite3 in this target
  }
  try {
    const pg = require('pg');
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (config, values, callback) {
      const text = typeof config === 'string' ? config : config?.text;
      if (isInsert(text)) {
        const params = Array.isArray(values) ? values : config?.values;
        c.pgInserts++;
        c.pgRows += params ? params.length / 3 : 0;
      }
      return query.call(this, config, values, callback);
    };
  } catch {
    // no pg in this target
  }
  const file = join(dir, `${process.pid}-${basename(process.argv[1])}.json`);
  setInterval(() => writeFileSync(file, JSON.stringify(c)), 500).unref();
}
