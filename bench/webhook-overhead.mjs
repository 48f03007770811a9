/**
 * What the plant webhook costs the API: POST /plants at a fixed rate (500 plants/s by default,
 * not maximum throughput: on 2 shared cores a throughput ratio is noise, CPU time is not), on a
 * fresh store per run, variants interleaved over rounds:
 *   none        no receiver;
 *   in-process  one receiver, the API delivers (WEBHOOK_DELIVERY=in-process, the default);
 *   external    one receiver, the API only writes the outbox (WEBHOOK_DELIVERY=external) and
 *               one webhook worker process (dist/bundle/webhook-worker.js) delivers; pg only.
 * For each it gives the API process's CPU time per created plant (utime + stime from
 * /proc/<pid>/stat, over the load and the delivery of its notices) and its ratio to `none` in
 * the same round, the worker's CPU per notice, and the delivery latency (a plant's 200 at the
 * load generator to its notice at the receiver, which runs in a process of its own:
 * lib/webhook-receiver.mjs).
 *
 *   npm run build && node bench/webhook-overhead.mjs [--rounds 5] [--duration 6] [--rate 500]
 *     [--warmup 2] [--stores sqlite,pg] [--node 24|20|current]
 *   --warmup: seconds of the same load first, not measured (the JIT's warm-up), then drained.
 *   pg uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a new database per run, dropped after).
 *   --node: the service's Node, as bench/run.mjs (lib/node-runtime.mjs).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { targetNode } from './lib/node-runtime.mjs';
import { snapshotBuild } from './lib/workspace.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '6' },
    rate: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '2' },
    stores: { type: 'string', default: 'sqlite,pg' },
    node: { type: 'string', default: process.env.BENCH_NODE ?? '24' },
  },
});
const node = targetNode(values.node);
const build = await snapshotBuild(
  mkdtempSync(join(tmpdir(), 'bench-webhook-build-')),
  node.sqlitePackage,
);
const bundle = join(build, 'dist/bundle');
const rounds = Number(values.rounds);
const duration = Number(values.duration) * 1000;
const rate = Number(values.rate);
const warmup = Number(values.warmup) * 1000;
const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
console.log(`service on Node ${node.version}; load on ${process.version}; ${rate} plants/s asked`);

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

// The receiver runs in a process of its own, as it would on another machine.
const receiver = spawn(process.execPath, [join(import.meta.dirname, 'lib/webhook-receiver.mjs')], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const ask = (message) =>
  new Promise((resolve) => {
    receiver.once('message', resolve);
    receiver.send(message);
  });
const receiverPort = await new Promise((resolve) =>
  receiver.once('message', (message) => resolve(message.port)),
);
const receiverUrl = `http://127.0.0.1:${receiverPort}/plant/webhook`;

async function adminQuery(sql) {
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

async function newDatabase() {
  const name = `bench_wh_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** Starts one of the bundle's entries; resolves once its /health answers 200. */
async function startProcess(entry, env, dir) {
  const [health, metrics] = [await freePort(), await freePort()];
  // Its log (warnings and errors) and stderr are kept in `dir`, to say why a run died.
  const stdout = openSync(join(dir, `${entry}.log`), 'w');
  const stderr = openSync(join(dir, `${entry}.stderr.log`), 'w');
  const child = spawn(node.path, [join(bundle, `${entry}.js`)], {
    env: {
      ...env,
      SERVICE_HEALTH_CHECK_PORT: String(health),
      SERVICE_METRICS_PORT: String(metrics),
    },
    stdio: ['ignore', stdout, stderr],
  });
  closeSync(stdout);
  closeSync(stderr);
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`http://127.0.0.1:${health}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, entry, dir };
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(
    `${entry} did not start: ${readFileSync(join(dir, `${entry}.stderr.log`), 'utf8').slice(-2000)}`,
  );
}

/** The API (and for `external` a worker) on a fresh store, with a receiver unless `none`. */
async function startVariant(store, variant) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhook-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config/mcp-servers.json'), '{"mcpServers":{}}');
  const port = await freePort();
  const token = randomBytes(24).toString('hex');
  const database = store === 'pg' ? await newDatabase() : undefined;
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NO_COLOR: '1',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    SERVICE_CONFIG_DIR: join(dir, 'config'),
    SERVICE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    DATA_DIR: join(dir, 'data'),
    API_TOKENS: token,
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...(variant === 'none'
      ? {}
      : {
          WEBHOOK_URLS: receiverUrl,
          WEBHOOK_SECRETS: `whsec_${randomBytes(32).toString('base64')}`,
          WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
        }),
  };
  // The API first: it migrates the store the worker then opens.
  const api = await startProcess(
    'main',
    { ...env, WEBHOOK_DELIVERY: variant === 'external' ? 'external' : 'in-process' },
    dir,
  );
  const worker =
    variant === 'external' ? await startProcess('webhook-worker', env, dir) : undefined;
  return { port, token, api, worker, database };
}

async function stopVariant({ api, worker, database }) {
  for (const { child } of [api, worker].filter(Boolean)) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  if (database) await adminQuery(`DROP DATABASE ${database.name} WITH (FORCE)`);
}

/** User + system CPU seconds of a process (all its threads), from /proc/<pid>/stat. */
function cpuSeconds({ child, entry, dir }) {
  const stat = `/proc/${child.pid}/stat`;
  if (!existsSync(stat)) {
    throw new Error(
      `${entry} (pid ${child.pid}) died: ${readFileSync(join(dir, `${entry}.stderr.log`), 'utf8').slice(-2000)}`,
    );
  }
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second here).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const quantile = (sorted, q) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/**
 * POST /plants at `rate` per second for `ms`, plant ids from `firstId` (open loop: a slow answer does not slow the
 * sending; up to 256 connections). Returns the 200s' plant ids and arrival times, the rate
 * achieved (200s over the time to the last answer) and the POSTs' p99.
 */
async function load({ port, token }, ms, firstId = 1) {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const acked = [];
  const latencies = [];
  const pending = new Set();
  let errors = 0;
  const post = (id) =>
    new Promise((resolve) => {
      const body = `{"id": ${id}, "name": "bench plant", "tag": "b"}`;
      const sent = performance.now();
      const headers = {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      };
      const req = request(
        { host: '127.0.0.1', port, path: '/plants', method: 'POST', agent, headers },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) {
              latencies.push(performance.now() - sent);
              acked.push([id, performance.timeOrigin + performance.now()]);
            } else errors++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const started = performance.now();
  let sent = 0;
  while (performance.now() - started < ms) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent < due) {
      const done = post(firstId + sent++).then(() => pending.delete(done));
      pending.add(done);
    }
    await sleep(2);
  }
  await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { acked, errors, achieved: acked.length / seconds, postP99: quantile(latencies, 0.99) };
}

/** Waits (at most 60 s) until the receiver has a notice of each of `served` plants. */
async function drain(served, distinct0) {
  const started = performance.now();
  while (performance.now() - started < 60_000) {
    if ((await ask('stats')).distinct - distinct0 >= served) return true;
    await sleep(10);
  }
  return false;
}

async function runVariant(store, variant) {
  const target = await startVariant(store, variant);
  try {
    // Unmeasured first: the JIT's warm-up, and its notices delivered before the measure starts.
    const warm = await load(target, warmup, 1_000_000_000);
    // The receiver's arrivals start empty (each run ends by asking for its lags, which clears them).
    if (variant !== 'none') await drain(warm.acked.length, 0);
    await ask({ type: 'lags', acked: [] });
    const before = await ask('stats');
    const [api0, worker0] = [cpuSeconds(target.api), target.worker ? cpuSeconds(target.worker) : 0];
    const { acked, errors, achieved, postP99 } = await load(target, duration);
    const served = acked.length;
    // The API's CPU counts until its notices are delivered: in-process, that is its work too.
    const drained = variant === 'none' ? true : await drain(served, before.distinct);
    const apiUs = ((cpuSeconds(target.api) - api0) * 1e6) / served;
    const after = await ask('stats');
    const lag = await ask({ type: 'lags', acked: variant === 'none' ? [] : acked });
    const workerUs = target.worker
      ? ((cpuSeconds(target.worker) - worker0) * 1e6) / (after.delivered - before.delivered)
      : undefined;
    return {
      achieved,
      errors,
      postP99,
      apiUs,
      workerUs,
      drained,
      lagP50: lag.p50,
      lagP99: lag.p99,
      load: loadavg()[0],
    };
  } finally {
    await stopVariant(target);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fixed = (x, digits = 0) => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(digits));

function printRound(store, round, variant, r) {
  const delivery =
    variant === 'none'
      ? ''
      : `; lag p50 ${fixed(r.lagP50)} ms p99 ${fixed(r.lagP99)} ms${r.drained ? '' : ' (NOT all delivered within 60 s)'}`;
  console.log(
    `${store} round ${round} ${variant}: ${fixed(r.achieved)} plants/s${r.errors ? ` (${r.errors} non-200)` : ''}, POST p99 ${fixed(r.postP99, 1)} ms; API ${fixed(r.apiUs)} us CPU per plant${r.workerUs === undefined ? '' : `, worker ${fixed(r.workerUs)} us per notice`}${delivery}; load average ${r.load.toFixed(2)}`,
  );
}

function printSummary(store, variants, results) {
  const of = (variant, key) => median(results[variant].map((r) => r[key]));
  // Each round's ratio to `none` (run back to back, under the same load from elsewhere).
  const ratios = (variant) => results[variant].map((r, i) => r.apiUs / results.none[i].apiUs);
  const loads = Object.values(results).flatMap((rs) => rs.map((r) => r.load));
  console.log(
    `\n${store}: medians of ${rounds} rounds of ${duration / 1000} s at ${rate} plants/s asked, load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}`,
  );
  console.log(
    '| variant | plants/s | API CPU per plant | vs none (rounds) | worker CPU per notice | lag p50 | lag p99 |',
  );
  console.log('|---|--:|--:|--:|--:|--:|--:|');
  for (const variant of variants) {
    const xs = ratios(variant);
    const spread = `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
    console.log(
      `| ${variant} | ${fixed(of(variant, 'achieved'))} | ${fixed(of(variant, 'apiUs'))} us | ${median(xs).toFixed(2)}x (${spread}) | ${variant === 'external' ? `${fixed(of(variant, 'workerUs'))} us` : '-'} | ${variant === 'none' ? '-' : `${fixed(of(variant, 'lagP50'))} ms`} | ${variant === 'none' ? '-' : `${fixed(of(variant, 'lagP99'))} ms`} |`,
    );
  }
}

for (const store of values.stores.split(',')) {
  if (store === 'pg' && !pgUrl) {
    console.log('pg: no BENCH_DATABASE_URL or TEST_DATABASE_URL, skipped');
    continue;
  }
  const variants = store === 'pg' ? ['none', 'in-process', 'external'] : ['none', 'in-process'];
  const results = Object.fromEntries(variants.map((v) => [v, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const variant of variants) {
      const result = await runVariant(store, variant);
      results[variant].push(result);
      printRound(store, round, variant, result);
    }
  }
  printSummary(store, variants, results);
}
receiver.send('close');
