/**
 * `npm run bench`: the service against its baselines, on the embedded store and on PostgreSQL.
 * See bench/README.md for what it measures and how to read it; `--help` for the options.
 *
 * Every target runs as its own process for the whole run (json-server's "empty" one is
 * restarted before each of its runs, so it stays empty); the load comes from autocannon in a
 * separate process (lib/load-worker.mjs). Runs are interleaved, round after round, and the
 * figures are medians over the rounds, because the shared machines are noisy.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { summarizeProfile } from './lib/cpuprofile.mjs';
import { RUN_BASE, RUN_BLOCK, SEED_BASE, plantId } from './lib/ids.mjs';
import { startLoadWorker } from './lib/load.mjs';
import { evaluateGoals, markdown } from './lib/report.mjs';
import { summarize } from './lib/stats.mjs';
import {
  databaseUrl,
  dropDatabase,
  findPostgres,
  fsType,
  preloadPostgres,
  preloadSqlite,
  recreateDatabase,
} from './lib/stores.mjs';
import { chartPod, enablePod } from './lib/pod.mjs';
import { startJsonServer, startPrism, startRaw, startService } from './lib/targets.mjs';

const BENCH = import.meta.dirname;
const ROOT = join(BENCH, '..');
const SEED_COUNT = 2_000;
const JSON_SERVER_ROWS = 100_000;

const HELP = `npm run bench [-- options]

  --quick            1 round of 1 s runs, no preloaded-store scenario (results/quick.*)
  --rounds N         rounds of every run (BENCH_ROUNDS, default 3)
  --duration S       seconds per run (BENCH_DURATION, default 3)
  --preload N        rows preloaded for the large-store scenario (BENCH_PRELOAD, default
                     1000000; 0 skips it)
  --stores LIST      sqlite,pg (BENCH_STORES); pg needs BENCH_DATABASE_URL, DATABASE_URL or
                     the local server of .ci/start-postgres.sh
  --scenarios LIST   post-c1,post-c16,post-c64,get-c16,mix-c16 (default all)
  --no-baselines     the service alone
  --service FILE     the service's main.js (default: a copy of dist/ taken at the start)
  --compare FILE     also run another build's main.js (service-b), for before/after figures
  --compare-args=A  node options for service-b (and for --profile), e.g.
                     --compare-args=--max-semi-space-size=4;
                     alone, service-b is this build with those options
  --profile          instead: profile the service under POST c=16 (--cpu-prof) and summarize;
                     with --scenarios get-c16, under GET /plants/{id} (results/profile-<store>-get.md)
  --ids MODE         spread (default: ids all over the int64 key space, as clients choose
                     them) or sequential (ascending: every insert at the B-tree's right edge)
  --pod MEMORY       run the service and the raw baselines as the chart's pod runs the
                     service: each in a memory cgroup of its own limited to MEMORY (needs
                     root) and with the chart's nodeOptions as NODE_OPTIONS (default: the
                     chart's resources.limits.memory; off: neither, Node's defaults for the
                     host); json-server and Prism always run with the host's defaults
  --node-options=O   NODE_OPTIONS for the pod instead of the chart's nodeOptions ('' for none)
  --keep             keep the data folder (bench/.data/<run>) and its logs
  --output NAME      write results/NAME.md and .json (default latest, or quick with --quick)
`;

const SCENARIOS = [
  { id: 'post-c1', title: 'POST /plants, 1 connection', kind: 'post', connections: 1 },
  { id: 'post-c16', title: 'POST /plants, 16 connections', kind: 'post', connections: 16 },
  { id: 'post-c64', title: 'POST /plants, 64 connections', kind: 'post', connections: 64 },
  { id: 'get-c16', title: 'GET /plants/{id}, 16 connections', kind: 'get', connections: 16 },
  { id: 'mix-c16', title: '80% GET, 20% POST, 16 connections', kind: 'mix', connections: 16 },
];

/** Which scenarios each kind of target takes part in. */
const ROLE_SCENARIOS = {
  service: () => true,
  'service-b': () => true,
  'raw-each': () => true,
  'raw-group': (s) => s.kind !== 'get', // the same server as raw-each for reads
  'service-1m': (s) => s.id === 'post-c16',
  'json-server-empty': (s) => s.kind === 'post',
  'json-server-100k': (s) => s.kind === 'post',
  prism: (s) => s.kind === 'post',
};

function options() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      preload: { type: 'string' },
      stores: { type: 'string' },
      scenarios: { type: 'string' },
      'no-baselines': { type: 'boolean' },
      service: { type: 'string' },
      compare: { type: 'string' },
      'compare-args': { type: 'string' },
      profile: { type: 'boolean' },
      keep: { type: 'boolean' },
      pod: { type: 'string' },
      'node-options': { type: 'string' },
      output: { type: 'string' },
      ids: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const env = process.env;
  const quick = Boolean(values.quick);
  const number = (flag, name, fallback) => {
    const value = Number(flag ?? env[name] ?? fallback);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: not a number`);
    return value;
  };
  return {
    quick,
    rounds: Math.max(1, Math.round(number(values.rounds, 'BENCH_ROUNDS', quick ? 1 : 3))),
    durationS: number(values.duration, 'BENCH_DURATION', quick ? 1 : 3),
    preload: Math.round(number(values.preload, 'BENCH_PRELOAD', quick ? 0 : 1_000_000)),
    stores: (values.stores ?? env.BENCH_STORES ?? 'sqlite,pg').split(',').map((s) => s.trim()),
    scenarios: (values.scenarios ?? SCENARIOS.map((s) => s.id).join(',')).split(','),
    baselines: !values['no-baselines'],
    service: values.service,
    compare: values.compare ?? (values['compare-args'] ? 'same' : undefined),
    compareArgs: (values['compare-args'] ?? '').split(' ').filter(Boolean),
    profile: Boolean(values.profile),
    profileS: number(undefined, 'BENCH_PROFILE_SECONDS', quick ? 3 : 10),
    keep: Boolean(values.keep),
    pod: values.pod ?? env.BENCH_POD,
    nodeOptions: values['node-options'],
    output: values.output ?? (quick ? 'quick' : 'latest'),
    ids: values.ids ?? env.BENCH_IDS ?? 'spread',
  };
}

/**
 * Where the stores live: the same filesystem as the checkout, so fsync costs what it costs on
 * this disk. The system's temporary folder when it is on the checkout's device (outside the
 * tree that ESLint and Prettier walk), else bench/.data; BENCH_DATA_DIR overrides both.
 */
function dataParent() {
  if (process.env.BENCH_DATA_DIR) return process.env.BENCH_DATA_DIR;
  const tmp = os.tmpdir();
  return statSync(tmp).dev === statSync(ROOT).dev && fsType(tmp) !== 'tmpfs'
    ? tmp
    : join(BENCH, '.data');
}

async function ensureInstalled() {
  if (!existsSync(join(BENCH, 'node_modules/autocannon/package.json'))) {
    console.log("installing the bench's own dependencies: npm ci --prefix bench");
    const install = spawnSync('npm', ['ci', '--prefix', BENCH, '--no-audit', '--no-fund'], {
      stdio: 'inherit',
    });
    if (install.status !== 0) throw new Error('npm ci --prefix bench failed');
  }
}

/** The newest modification time under `dir`, in ms (0 when it does not exist). */
function newestMtime(dir) {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true }).reduce(
    (newest, file) => Math.max(newest, statSync(join(dir, file)).mtimeMs),
    0,
  );
}

/**
 * A private copy of the built service for this run: others may rebuild dist/ while a run goes
 * on. It waits for a build that has been still for 3 s (builds it if there is none after a
 * minute), and resolves packages from the checkout through a node_modules link (not from
 * bench/node_modules, whose express is json-server's).
 */
async function snapshotBuild(dataRoot) {
  const dist = join(ROOT, 'dist');
  for (let waited = 0; ; waited += 1) {
    const quiet = Date.now() - newestMtime(dist) > 3_000;
    if (existsSync(join(dist, 'main.js')) && quiet) break;
    if (waited === 60 && !existsSync(join(dist, 'main.js'))) {
      console.log('no dist/main.js: npm run build');
      if (spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) {
        throw new Error('npm run build failed');
      }
    }
    if (waited === 0) console.log('waiting for dist/ to be built and still');
    if (waited > 180) throw new Error('dist/ did not settle within 3 minutes');
    await sleep(1_000);
  }
  const build = join(dataRoot, 'build');
  cpSync(dist, join(build, 'dist'), { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(build, 'package.json'));
  copyFileSync(join(ROOT, 'openapi.json'), join(build, 'openapi.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(build, 'node_modules'), 'dir');
  return build;
}

function machine(dataRoot) {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
    fsType: fsType(dataRoot),
  };
}

const loadAverage = () =>
  os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');

async function main() {
  const opts = options();
  await ensureInstalled();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const dataRoot = join(dataParent(), `plant-store-bench-${stamp}`);
  mkdirSync(dataRoot, { recursive: true });
  const build = await snapshotBuild(dataRoot);
  const meta = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: machine(dataRoot),
    settings: {
      rounds: opts.rounds,
      durationS: opts.durationS,
      preload: opts.preload,
      ids: opts.ids,
    },
    loadBefore: loadAverage(),
  };
  if (opts.pod !== 'off') {
    const chart = chartPod(ROOT);
    const pod = {
      memory: opts.pod ?? chart.memory,
      nodeOptions: opts.nodeOptions ?? chart.nodeOptions,
    };
    const why = enablePod(pod);
    meta.pod = { ...pod, why };
    if (why) console.warn(`warning: no pod memory limit (${why}); V8 sizes its heap from the host`);
  }
  console.log(
    `${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${meta.machine.node}; data in ${dataRoot} (${meta.machine.fsType})`,
  );
  if (meta.machine.fsType === 'tmpfs') {
    console.warn('warning: the data folder is on tmpfs; fsync costs nothing there');
  }

  let postgres;
  if (opts.stores.includes('pg')) {
    postgres = await findPostgres();
    if (!postgres) console.warn('no PostgreSQL server found: the PostgreSQL runs are skipped');
    else meta.postgres = postgres.info;
  }
  const stores = opts.stores.filter((s) => s === 'sqlite' || (s === 'pg' && postgres));
  const databases = [];
  const pgDatabase = async (name) => {
    const full = `plantbench_${name}`;
    await recreateDatabase(postgres.adminUrl, full);
    databases.push(full);
    return databaseUrl(postgres.adminUrl, full);
  };

  const token = randomBytes(32).toString('base64url');
  const targets = [];
  const load = startLoadWorker({ ids: opts.ids });
  let nextBlock = RUN_BASE;
  const takeBlock = () => (nextBlock += RUN_BLOCK) - RUN_BLOCK;
  const started = Date.now();

  try {
    if (opts.profile) {
      await profile({ opts, stores, pgDatabase, token, load, dataRoot, build });
      return;
    }

    // Start every target once, in the order the rows are reported.
    const main = opts.service ?? join(build, 'dist/main.js');
    for (const store of stores) {
      const dir = (name) => join(dataRoot, `${name}-${store}`);
      const url = async (name) => (store === 'pg' ? pgDatabase(name) : undefined);
      const add = async (role, label, start) => {
        const t = { role, store, name: `${role}@${store}`, label: `${label} (${store})` };
        console.log(`starting ${t.name}`);
        Object.assign(t, await start());
        targets.push(t);
      };
      await add('service', 'service', async () => ({
        ...(await startService({
          name: 'service',
          main,
          dir: dir('service'),
          token,
          databaseUrl: await url('svc'),
        })),
        seeded: true,
      }));
      if (opts.compare) {
        const label = [opts.compare === 'same' ? '' : opts.compare, ...opts.compareArgs]
          .filter(Boolean)
          .join(' ');
        await add('service-b', `service-b: ${label}`, async () => ({
          ...(await startService({
            name: 'service-b',
            main: opts.compare === 'same' ? main : opts.compare,
            dir: dir('service-b'),
            token,
            databaseUrl: await url('svc_b'),
            nodeArgs: opts.compareArgs,
          })),
          seeded: true,
        }));
      }
      if (opts.baselines) {
        for (const [role, script] of [
          ['raw-each', 'raw-each.mjs'],
          ['raw-group', 'raw-group.mjs'],
        ]) {
          await add(role, `${role} (a${role === 'raw-each' ? 1 : 2})`, async () => ({
            ...(await startRaw({
              name: role,
              script,
              dir: dir(role),
              token,
              databaseUrl: await url(role.replace('-', '_')),
            })),
            seeded: true,
          }));
        }
      }
      if (opts.preload > 0) {
        const rows = opts.preload;
        const label = rows % 1_000_000 === 0 ? `${rows / 1_000_000}M` : `${rows}`;
        await add('service-1m', `service, ${label} plants stored`, () =>
          startPreloaded({
            ids: opts.ids,
            store,
            main,
            dir: dir('service-1m'),
            token,
            rows,
            url: () => url('svc_1m'),
          }),
        );
      }
    }
    if (opts.baselines) {
      const plants = Array.from({ length: JSON_SERVER_ROWS }, (_, i) => ({
        id: plantId(i + 1, opts.ids),
        name: `plant ${i + 1}`,
        tag: 'bench',
      }));
      const jsonStore = { store: null };
      console.log('starting json-server (empty), json-server (100k) and prism');
      const emptyDir = join(dataRoot, 'json-server-empty');
      const empty = {
        ...jsonStore,
        role: 'json-server-empty',
        name: 'json-server-empty',
        label: 'json-server 0.17.4, empty',
        ...(await startJsonServer({ name: 'json-server-empty', dir: emptyDir, plants: [] })),
      };
      // Restarted before each of its runs, so every run starts on an empty store.
      empty.restart = async () => {
        await empty.proc.stop();
        Object.assign(
          empty,
          await startJsonServer({ name: 'json-server-empty', dir: emptyDir, plants: [] }),
        );
      };
      targets.push(
        empty,
        {
          ...jsonStore,
          role: 'json-server-100k',
          name: 'json-server-100k',
          label: 'json-server 0.17.4, 100k plants',
          ...(await startJsonServer({
            name: 'json-server-100k',
            dir: join(dataRoot, 'json-server-100k'),
            plants,
          })),
        },
        {
          ...jsonStore,
          role: 'prism',
          name: 'prism',
          label: 'Prism 5.14.2 mock',
          ...(await startPrism({
            name: 'prism',
            dir: join(dataRoot, 'prism'),
            token,
            spec: join(build, 'openapi.json'),
          })),
        },
      );
    }

    // Plants to read back, and a warm-up for the JIT, before the first measured run.
    for (const t of targets) {
      // Seeded targets get the ids the GET runs read; json-server-100k is full already.
      if (t.seeded || t.role !== 'json-server-100k') {
        await load.run({
          url: t.url,
          token,
          kind: 'post',
          connections: 16,
          amount: SEED_COUNT,
          runBase: t.seeded ? SEED_BASE : takeBlock(),
        });
      }
    }

    const scenarios = SCENARIOS.filter((s) => opts.scenarios.includes(s.id));
    const results = {};
    for (let round = 1; round <= opts.rounds; round++) {
      for (const scenario of scenarios) {
        for (const t of targets.filter((x) => ROLE_SCENARIOS[x.role](scenario))) {
          if (t.restart) await t.restart();
          const result = await load.run({
            url: t.url,
            token,
            kind: scenario.kind,
            connections: scenario.connections,
            duration: opts.durationS,
            runBase: takeBlock(),
            readBase: SEED_BASE,
            readCount: SEED_COUNT,
          });
          ((results[scenario.id] ??= {})[t.name] ??= []).push(result);
          console.log(
            `[${round}/${opts.rounds}] ${scenario.id.padEnd(8)} ${t.name.padEnd(20)} ` +
              `${String(Math.round(result.rps)).padStart(6)} req/s  p50 ${result.p50?.toFixed(2)} ` +
              `p99 ${result.p99?.toFixed(2)} ms  non-2xx ${result.non2xx} errors ${result.errors + result.timeouts}`,
          );
          await sleep(200);
        }
      }
    }

    const summary = Object.fromEntries(
      Object.entries(results).map(([id, byTarget]) => [
        id,
        Object.fromEntries(Object.entries(byTarget).map(([name, runs]) => [name, summarize(runs)])),
      ]),
    );
    const services = [];
    const others = [];
    for (const t of targets) {
      const row = {
        label: t.label,
        role: t.role,
        store: t.store,
        readyMs: t.proc.readyMs,
        peakRss: t.proc.peakRss(),
      };
      if (t.role.startsWith('service')) {
        services.push(row);
        if (t.migrationStart)
          services.push({
            ...t.migrationStart,
            label: `${t.label}, first start (empty)`,
            role: t.role,
            store: t.store,
          });
        row.logBytes = statSync(t.proc.logFile).size;
      } else others.push(row);
    }
    meta.loadAfter = loadAverage();
    meta.elapsedS = (Date.now() - started) / 1000;
    const goals = opts.baselines
      ? evaluateGoals({
          summary,
          stores,
          // service-b (--compare) is an experiment, not the service.
          services: services.filter((s) => s.role !== 'service-b'),
          hasTarget: (name) => targets.some((t) => t.name === name),
        })
      : [];
    const report = {
      meta,
      stores,
      scenarios,
      targets: targets.map(({ role, store, name, label }) => ({ role, store, name, label })),
      summary,
      goals,
      services,
      others,
      runs: results,
    };
    const text = markdown(report);
    mkdirSync(join(BENCH, 'results'), { recursive: true });
    writeFileSync(join(BENCH, 'results', `${opts.output}.md`), text);
    writeFileSync(
      join(BENCH, 'results', `${opts.output}.json`),
      `${JSON.stringify(report, null, 2)}\n`,
    );
    console.log(`\n${text}`);
    console.log(`written: bench/results/${opts.output}.md and .json`);
  } finally {
    load.stop();
    await Promise.all(targets.map((t) => t.proc.stop()));
    if (postgres && !opts.keep) {
      for (const name of databases) await dropDatabase(postgres.adminUrl, name).catch(() => {});
    }
    if (!opts.keep) rmSync(dataRoot, { recursive: true, force: true });
  }
}

/**
 * The service on a store holding `rows` plants: a first start creates the schema (its ready
 * time is the empty store's), the rows are bulk-loaded while it is stopped, then it starts again.
 */
async function startPreloaded({ store, main, dir, token, rows, url, ids }) {
  const databaseUrl = await url();
  const first = await startService({ name: 'service-1m', main, dir, token, databaseUrl });
  await first.proc.stop();
  const loadStarted = Date.now();
  const count =
    store === 'pg'
      ? await preloadPostgres(databaseUrl, rows, ids)
      : preloadSqlite(first.dataFile, rows, ids);
  console.log(`  ${count} plants preloaded in ${((Date.now() - loadStarted) / 1000).toFixed(1)} s`);
  const service = await startService({ name: 'service-1m', main, dir, token, databaseUrl });
  return { ...service, migrationStart: { readyMs: first.proc.readyMs } };
}

/** --profile: the service under POST c=16 with --cpu-prof; the profile summarized by function. */
async function profile({ opts, stores, pgDatabase, token, load, dataRoot, build }) {
  const main =
    opts.compare && opts.compare !== 'same'
      ? opts.compare
      : (opts.service ?? join(build, 'dist/main.js'));
  const kind = opts.scenarios.length === 1 && opts.scenarios[0] === 'get-c16' ? 'get' : 'post';
  const what = kind === 'get' ? 'GET /plants/{id}' : 'POST /plants';
  for (const store of stores) {
    const profDir = join(dataRoot, `profile-${store}`);
    const service = await startService({
      name: 'service',
      main,
      dir: join(dataRoot, `service-${store}`),
      token,
      databaseUrl: store === 'pg' ? await pgDatabase('svc_prof') : undefined,
      nodeArgs: [
        ...opts.compareArgs,
        '--cpu-prof',
        '--cpu-prof-dir',
        profDir,
        '--cpu-prof-interval',
        '250',
      ],
    });
    await load.run({
      url: service.url,
      token,
      kind: 'post',
      connections: 16,
      amount: SEED_COUNT,
      runBase: SEED_BASE,
    });
    const microseconds = () => Number(process.hrtime.bigint() / 1000n);
    const from = microseconds();
    const result = await load.run({
      url: service.url,
      token,
      kind,
      connections: 16,
      duration: opts.profileS,
      runBase: RUN_BASE,
      readBase: SEED_BASE,
      readCount: SEED_COUNT,
    });
    const to = microseconds();
    await service.proc.stop();
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no .cpuprofile in ${profDir}`);
    const text = summarizeProfile(join(profDir, file), {
      title: `CPU profile of the service, ${what} at 16 connections, ${store}`,
      requests: result.responses,
      window: [from, to],
      note: `${opts.profileS} s at ${Math.round(result.rps)} req/s (p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms), after ${SEED_COUNT} warm-up requests; only the samples of the measured ${opts.profileS} s (${result.responses} requests) count. Sampled every 250 us; the load generator shares the 2 cores.`,
    });
    const startup = summarizeProfile(join(profDir, file), {
      title: `Start-up, from the process start to the first 200 from /health (${Math.round(service.proc.readyMs)} ms)`,
      window: [0, service.proc.readyAtUs],
      top: 15,
      sections: ['selfArea', 'self'],
    });
    mkdirSync(join(BENCH, 'results'), { recursive: true });
    const output = `results/profile-${store}${kind === 'get' ? '-get' : ''}.md`;
    writeFileSync(
      join(BENCH, output),
      `${text}\n${startup.replace(/^# /, '## ').replace(/^## (?!Start)/gm, '### ')}`,
    );
    console.log(`\n${text}\nwritten: bench/${output}`);
  }
}

await main();
