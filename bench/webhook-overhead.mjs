/**
 * What the plant webhook costs POST /plants: the service with one receiver configured against
 * the service with none, POST /plants at 16 connections, runs interleaved (none, one, none,
 * one, ...) on a fresh store each, medians and their ratio. The receiver answers 204 from a
 * process of its own (lib/webhook-receiver.mjs: in real use it is on another machine), the load
 * comes from this process (plain node:http with keep-alive); all share the machine's cores, so
 * each line also gives the CPU per request of the service (all threads, and its main thread),
 * of the load and of the receiver. With a receiver it also gives the sending thread's CPU per
 * notice delivered, how long the backlog took to drain once the load stopped, and the delivery
 * lag (a plant's 200 at the load generator to its notice at the receiver): a dispatcher that
 * starves under load would look cheap by CPU alone. The figures compare the variants, not
 * absolute throughput (bench/run.mjs does that).
 *
 *   npm run build && node bench/webhook-overhead.mjs [--rounds 5] [--duration 4] [--stores sqlite,pg]
 *   pg uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a new database per run).
 *   --node 24 (default) | 20 | current: the service's Node, as bench/run.mjs (lib/node-runtime.mjs):
 *     the run uses a private copy of dist/ with a better-sqlite3 built for that Node.
 *   --dist-b <dir>: an older build's dist/ (copied, with the checkout's packages), run with one
 *     receiver as `one-b` in the same rounds (none, one, one-b, ...): a change measured before
 *     and after in one run.
 *   pg with a receiver also prints the outbox's row updates per notice (pg_stat_user_tables'
 *     n_tup_upd of webhook_outbox once the service is gone: leases, renewals, marks, retries).
 *   --profile <dir>: every run under node --cpu-prof; each thread's profile is
 *     summarized into <dir>/webhook-<store>-<variant>-<round>.md with the requests it served.
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  openSync,
  mkdtempSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { summarizeProfile } from './lib/cpuprofile.mjs';
import { targetNode } from './lib/node-runtime.mjs';
import { snapshotBuild, snapshotOther } from './lib/workspace.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '4' },
    stores: { type: 'string', default: 'sqlite' },
    connections: { type: 'string', default: '16' },
    'dist-b': { type: 'string' },
    profile: { type: 'string' },
    node: { type: 'string', default: process.env.BENCH_NODE ?? '24' },
  },
});
const node = targetNode(values.node);
const buildRoot = mkdtempSync(join(tmpdir(), 'bench-webhook-build-'));
const distA = join(await snapshotBuild(buildRoot, node.sqlitePackage), 'dist');
const distB = values['dist-b']
  ? join(snapshotOther(join(values['dist-b'], 'main.js'), buildRoot, node.sqlitePackage), '..')
  : undefined;
console.log(`service on Node ${node.version}; bench and load on ${process.version}`);
const rounds = Number(values.rounds);
const duration = Number(values.duration) * 1000;
const connections = Number(values.connections);
const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

// The receiver runs in a process of its own: its CPU is reported apart, not as the bench's.
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

/**
 * PostgreSQL's CPU seconds on this machine (it shares the cores too): its postmaster's, its
 * live children's, and those of the children it reaped (a stopped service's backends). Needs
 * the server on this machine; undefined otherwise.
 */
let postmaster;
async function findPostmaster() {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    const { rows } = await client.query('select pg_backend_pid() as pid');
    // Read while this backend lives: its parent is the postmaster.
    const stat = `/proc/${rows[0].pid}/stat`;
    if (!existsSync(stat)) return undefined;
    return Number(readFileSync(stat, 'utf8').split(') ')[1].split(' ')[1]);
  } finally {
    await client.end();
  }
}
function postgresCpuSeconds() {
  if (!postmaster) return undefined;
  const fieldsOf = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const own = fieldsOf(postmaster);
  // utime, stime, cutime, cstime: fields 14 to 17 of stat(5).
  let ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(own[i]), 0);
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const fields = fieldsOf(pid);
      if (Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return ticks / 100;
}

async function newDatabase() {
  const name = `bench_wh_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Rows of webhook_outbox updated in the database at `url` (claims' leases, renewals, delivered
 * marks, retries), read once the service's backends have exited: a backend flushes its
 * statistics at the latest when it ends. Undefined if they are still there after 10 s.
 */
async function outboxUpdates(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await client.query(
        'select count(*)::int as others from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      if (rows[0].others === 0) {
        const stats = await client.query(
          "select n_tup_upd::int as updates from pg_stat_user_tables where relname = 'webhook_outbox'",
        );
        return stats.rows[0]?.updates;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return undefined;
  } finally {
    await client.end();
  }
}

/** Waits (at most 10 s) until no notice is pending in the database at `url`: every mark written. */
async function untilMarked(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await client.query(
        "select count(*)::int as pending from webhook_outbox where state = 'pending'",
      );
      if (rows[0].pending === 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.end();
  }
}

async function startService(store, withReceiver, dist, profileDir) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhook-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config/mcp-servers.json'), '{"mcpServers":{}}');
  const [port, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const token = randomBytes(24).toString('hex');
  const databaseUrl = store === 'pg' ? await newDatabase() : undefined;
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NO_COLOR: '1',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    SERVICE_HEALTH_CHECK_PORT: String(health),
    SERVICE_METRICS_PORT: String(metrics),
    SERVICE_CONFIG_DIR: join(dir, 'config'),
    SERVICE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    DATA_DIR: join(dir, 'data'),
    API_TOKENS: token,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...(withReceiver
      ? {
          WEBHOOK_URLS: receiverUrl,
          WEBHOOK_SECRETS: `whsec_${randomBytes(32).toString('base64')}`,
        }
      : {}),
  };
  const args = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  // Its log (warnings and errors) and stderr kept in its folder, to say why a service died
  // or a backlog did not drain.
  const stdout = openSync(join(dir, 'service.log'), 'w');
  const stderr = openSync(join(dir, 'stderr.log'), 'w');
  const child = spawn(node.path, [...args, join(dist, 'main.js')], {
    env,
    stdio: ['ignore', stdout, stderr],
  });
  closeSync(stdout);
  closeSync(stderr);
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`http://127.0.0.1:${health}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, token, dir, child, databaseUrl };
}

/** 16 loops of POST /plants with new ids for `duration`; answers 200 per second. */
async function load({ port, token }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let next = 1;
  let ok = 0;
  // Each 200's plant id and when it came (ms since the epoch), for the delivery lag.
  const acked = [];
  let other = 0;
  const end = Date.now() + duration;
  const post = () =>
    new Promise((resolve) => {
      const id = next++;
      const body = `{"id": ${id}, "name": "bench plant", "tag": "b"}`;
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/plants',
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) {
              ok++;
              acked.push([id, performance.timeOrigin + performance.now()]);
            } else other++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        other++;
        resolve();
      });
      req.end(body);
    });
  const started = Date.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) await post();
    }),
  );
  agent.destroy();
  return { rps: ok / ((Date.now() - started) / 1000), errors: other, served: ok, acked };
}

/** User + system CPU of a process, all its threads (or its main thread: `/task/<pid>`), from /proc. */
function cpuSeconds({ child, dir }, mainThread = false) {
  const pid = child.pid;
  const stat = mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`;
  if (!existsSync(stat)) {
    const log = readFileSync(join(dir, 'stderr.log'), 'utf8').slice(-2000);
    throw new Error(`the service (pid ${pid}) is not running; its stderr ends:\n${log}`);
  }
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second here).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * The sending thread's CPU seconds (0 when there is none): Node 24 names a thread after its
 * Worker's `name` (an unnamed one is `WorkerThread`, as in builds before the name was given).
 */
function senderCpuSeconds({ child }) {
  let total = 0;
  for (const task of readdirSync(`/proc/${child.pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${child.pid}/task/${task}/comm`, 'utf8').trim();
      if (comm !== 'webhook-sender' && comm !== 'WorkerThread') continue;
      const fields = readFileSync(`/proc/${child.pid}/task/${task}/stat`, 'utf8')
        .split(') ')[1]
        .split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return total;
}

/** Waits (at most 60 s) until the receiver got a notice of each of `served` plants; seconds. */
async function drain(served, distinct0) {
  const started = performance.now();
  while (performance.now() - started < 60_000) {
    if ((await ask('stats')).distinct - distinct0 >= served) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return (performance.now() - started) / 1000;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (pgUrl && values.stores.split(',').includes('pg')) postmaster = await findPostmaster();

for (const store of values.stores.split(',')) {
  if (store === 'pg' && !pgUrl) {
    console.log('pg: no BENCH_DATABASE_URL or TEST_DATABASE_URL, skipped');
    continue;
  }
  const variants = values['dist-b'] ? ['none', 'one', 'one-b'] : ['none', 'one'];
  const results = Object.fromEntries(variants.map((v) => [v, []]));
  let fsType = '';
  for (let round = 0; round < rounds; round++) {
    for (const variant of variants) {
      const profileDir = values.profile
        ? mkdtempSync(join(tmpdir(), 'bench-webhook-prof-'))
        : undefined;
      const service = await startService(
        store,
        variant !== 'none',
        variant === 'one-b' ? distB : distA,
        profileDir,
      );
      fsType ||= execFileSync('stat', ['-f', '-c', '%T', service.dir]).toString().trim();
      const postgresCpu0 = store === 'pg' ? postgresCpuSeconds() : undefined;
      const [serviceCpu0, mainCpu0, senderCpu0, benchCpu0, receiver0] = [
        cpuSeconds(service),
        cpuSeconds(service, true),
        senderCpuSeconds(service),
        process.cpuUsage(),
        await ask('stats'),
      ];
      const microseconds = () => Number(process.hrtime.bigint() / 1000n);
      const from = microseconds();
      const { rps, errors, served, acked } = await load(service);
      const to = microseconds();
      const loadSeconds = (to - from) / 1e6;
      const senderLoadCpu = senderCpuSeconds(service) - senderCpu0;
      const deliveredUnderLoad = (await ask('stats')).delivered - receiver0.delivered;
      // CPU per request, to tell the service's own cost from the bench's (load and receiver).
      const serviceUs = ((cpuSeconds(service) - serviceCpu0) * 1e6) / served;
      const mainUs = ((cpuSeconds(service, true) - mainCpu0) * 1e6) / served;
      const benchCpu = process.cpuUsage(benchCpu0);
      const benchUs = (benchCpu.user + benchCpu.system) / served;
      const postgresUs =
        postgresCpu0 === undefined
          ? undefined
          : ((postgresCpuSeconds() - postgresCpu0) * 1e6) / served;
      const receiver1 = await ask('stats');
      const receiverUs = (receiver1.cpuUs - receiver0.cpuUs) / served;
      // The API's share of the 2 cores under load: its main thread's CPU per wall second.
      const mainShare = (mainUs * served) / 1e6 / loadSeconds;
      let delivery;
      if (variant !== 'none') {
        const drainSeconds = await drain(served, receiver0.distinct);
        const receiver2 = await ask('stats');
        const delivered = receiver2.delivered - receiver0.delivered;
        const lag = await ask({ type: 'lags', acked });
        // The delivered marks (once a second) written before the service stops, so the
        // outbox's row updates below count every notice's.
        if (service.databaseUrl) await untilMarked(service.databaseUrl);
        delivery = {
          drainSeconds,
          // The sending thread's CPU per notice, over the load and the drain after it.
          senderUs: ((senderCpuSeconds(service) - senderCpu0) * 1e6) / delivered,
          senderShare: senderLoadCpu / loadSeconds,
          underLoad: deliveredUnderLoad / served,
          lagP50: lag.p50,
          lagP99: lag.p99,
        };
      } else await ask({ type: 'lags', acked: [] });
      if (profileDir) {
        // A clean exit writes the profile.
        const exited = new Promise((resolve) => service.child.once('exit', resolve));
        service.child.kill('SIGTERM');
        await exited;
        mkdirSync(values.profile, { recursive: true });
        // One profile per thread: CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile, thread 0
        // the main one (the sending worker thread, when there is one, gets its own summary).
        for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
          const thread = file.split('.')[4] === '0' ? '' : '-worker';
          writeFileSync(
            join(values.profile, `webhook-${store}-${variant}${thread}-${round + 1}.md`),
            summarizeProfile(join(profileDir, file), {
              title: `POST /plants c=${connections}, webhook receivers: ${variant}${thread}, ${store}, round ${round + 1}`,
              requests: served,
              // The profile's clock is the monotonic one this process reads too.
              window: [from, to],
              note: `Only the samples of the ${duration / 1000} s of load count (not start-up or shutdown); per-request figures divide by the ${served} 200s served.`,
            }),
          );
        }
      } else {
        const exited = new Promise((resolve) => service.child.once('exit', resolve));
        service.child.kill('SIGKILL');
        await exited;
      }
      if (delivery && service.databaseUrl) {
        const updates = await outboxUpdates(service.databaseUrl);
        if (updates !== undefined) delivery.updatesPerNotice = updates / served;
      }
      results[variant].push({
        rps,
        mainUs,
        serviceUs,
        benchUs,
        receiverUs,
        postgresUs,
        mainShare,
        ...delivery,
        load: loadavg()[0],
      });
      const deliveryLine = delivery
        ? `${delivery.updatesPerNotice === undefined ? '' : `; ${delivery.updatesPerNotice.toFixed(2)} outbox row updates per notice`}; sender ${delivery.senderUs.toFixed(0)} us per notice (${(100 * delivery.senderShare).toFixed(0)} % of a core under load), ${(100 * delivery.underLoad).toFixed(0)} % delivered under load, drained ${delivery.drainSeconds.toFixed(2)} s after, lag p50 ${delivery.lagP50.toFixed(0)} ms p99 ${delivery.lagP99.toFixed(0)} ms`
        : '';
      console.log(
        `${store} round ${round + 1} ${variant}: ${rps.toFixed(0)} req/s${errors ? `, ${errors} non-200` : ''}; CPU per request: service ${serviceUs.toFixed(0)} us (main thread ${mainUs.toFixed(0)}, ${(100 * mainShare).toFixed(0)} % of a core), load ${benchUs.toFixed(0)} us, receiver ${receiverUs.toFixed(0)} us${postgresUs === undefined ? '' : `, PostgreSQL ${postgresUs.toFixed(0)} us`}${deliveryLine}; load average ${loadavg()[0].toFixed(2)}`,
      );
    }
  }
  const of = (variant, key) => median(results[variant].map((r) => r[key]));
  // The median of each round's ratio (the variants of a round ran back to back, under the same
  // load from elsewhere), not a ratio of medians taken from different rounds.
  const ratio = (variant, key, to = 'none') =>
    median(results[variant].map((r, i) => r[key] / results[to][i][key]));
  const spread = (variant, key, to = 'none') => {
    const xs = results[variant].map((r, i) => r[key] / results[to][i][key]);
    return `${Math.min(...xs).toFixed(2)} to ${Math.max(...xs).toFixed(2)}`;
  };
  const loads = Object.values(results).flatMap((rs) => rs.map((r) => r.load));
  console.log(
    `${store} (data folder on ${fsType}), medians of ${rounds} rounds, load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}:`,
  );
  for (const variant of variants) {
    const label = variant === 'one-b' ? `one-b (${values['dist-b']})` : variant;
    const deliveryLine =
      variant === 'none'
        ? ''
        : `${store === 'pg' ? `; ${of(variant, 'updatesPerNotice').toFixed(2)} outbox row updates per notice` : ''}; sender ${of(variant, 'senderUs').toFixed(0)} us per notice (${(100 * of(variant, 'senderShare')).toFixed(0)} % of a core under load), drained ${of(variant, 'drainSeconds').toFixed(2)} s after the load, lag p50 ${of(variant, 'lagP50').toFixed(0)} ms p99 ${of(variant, 'lagP99').toFixed(0)} ms`;
    console.log(
      `  ${label}: ${of(variant, 'rps').toFixed(0)} req/s (${ratio(variant, 'rps').toFixed(3)}x of none, rounds ${spread(variant, 'rps')}${variant === 'one-b' ? `; one: ${ratio('one', 'rps', 'one-b').toFixed(3)}x of one-b, rounds ${spread('one', 'rps', 'one-b')}` : ''}); main thread ${of(variant, 'mainUs').toFixed(0)} us per request (${ratio(variant, 'mainUs').toFixed(2)}x, ${(100 * of(variant, 'mainShare')).toFixed(0)} % of a core), all threads ${of(variant, 'serviceUs').toFixed(0)} us (${ratio(variant, 'serviceUs').toFixed(2)}x); load ${of(variant, 'benchUs').toFixed(0)} us, receiver ${of(variant, 'receiverUs').toFixed(0)} us${store === 'pg' && postmaster ? `, PostgreSQL ${of(variant, 'postgresUs').toFixed(0)} us` : ''} per request${deliveryLine}`,
    );
  }
}
console.log(`notices delivered to the receiver during the runs: ${(await ask('stats')).delivered}`);
receiver.send('close');
