/**
 * The garbage collector under load, the service beside nest-floor (a3), at 16 connections on
 * Node 24, each target as in the pod (lib/pod.mjs), one after the other: POST /plants on SQLite,
 * then, when a PostgreSQL server is found (see bench/README.md), POST and GET /plants/{id} on it.
 * For each: its pauses (count, median, p99, max, share of the run), which the p99 latency mostly
 * waits behind, and the bytes a request the scavenges promote to the old generation, which holds
 * them until a full GC. Writes results/gc-pauses.md.
 *
 *   node bench/gc-pauses.mjs [seconds]     (npm run build first; 10 s per target and scenario)
 *
 * Each target runs with --trace-gc-nvp; its log file gets the trace, whose `promoted=` counts
 * exact bytes (--trace-gc rounds the heap to 0.1 MB: ~280 B a request at these rates).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUN_BASE, SEED_BASE } from './lib/ids.mjs';
import { startLoadWorker } from './lib/load.mjs';
import { targetNode } from './lib/node-runtime.mjs';
import { chartPod, enablePod } from './lib/pod.mjs';
import { setTargetNode } from './lib/processes.mjs';
import { databaseUrl, dropDatabase, findPostgres, recreateDatabase } from './lib/stores.mjs';
import { startRaw, startService } from './lib/targets.mjs';
import { dataParent, ensureInstalled, snapshotBuild } from './lib/workspace.mjs';

const BENCH = import.meta.dirname;
const ROOT = join(BENCH, '..');
const seconds = Number(process.argv[2] ?? 10);
if (!(seconds > 0)) {
  console.error('usage: node bench/gc-pauses.mjs [seconds]');
  process.exit(2);
}
const TOKEN = 'gc-pauses-token-0123456789abcdefghijklmn';
const SEED = 2_000;
const TRACE = /(\d+) ms: pause=([\d.]+) .*?\bgc=(\w+)\b.*?\bpromoted=(\d+)/;
const COLLECTIONS = { s: 'Scavenge', mc: 'Mark-Compact', ms: 'Minor Mark-Sweep' };

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/**
 * Pauses by collection, and the bytes scavenges promoted, from a --trace-gc-nvp log: in all, and
 * in the run's second half, where what only the start and the unoptimized code promote is gone.
 */
function readTrace(text) {
  const pauses = new Map();
  const scavenges = [];
  for (const line of text.split('\n')) {
    const match = TRACE.exec(line);
    if (!match) continue;
    const [, at, pause, gc, bytes] = match;
    const collection = COLLECTIONS[gc] ?? gc;
    pauses.set(collection, [...(pauses.get(collection) ?? []), Number(pause)]);
    if (gc === 's') scavenges.push({ at: Number(at), bytes: Number(bytes) });
  }
  // A trace format this does not read would otherwise leave the target out of the table.
  if (pauses.size === 0)
    throw new Error('no --trace-gc-nvp line in the log: has its format changed?');
  const sum = (list) => list.reduce((total, { bytes }) => total + bytes, 0);
  const middle = scavenges.length && (scavenges[0].at + scavenges.at(-1).at) / 2;
  const promoted = sum(scavenges);
  return { pauses, promoted, promotedLater: sum(scavenges.filter(({ at }) => at >= middle)) };
}

/** One target under load: seeded, then measured for `seconds`; its trace and peak RSS. */
async function measure(target, kind) {
  const load = startLoadWorker({ url: target.url, token: TOKEN, connections: 16 });
  try {
    await load.run({ kind: 'post', amount: SEED, runBase: SEED_BASE });
    const before = readFileSync(target.proc.logFile, 'utf8').length;
    const result = await load.run({
      kind,
      duration: seconds,
      runBase: RUN_BASE,
      readBase: SEED_BASE,
      readCount: SEED,
    });
    if (!result.responses) throw new Error(`${target.proc.name} answered no request`);
    const peakRss = target.proc.peakRss();
    // Read before the stop: the collections of the shutdown are not the load's.
    const trace = readTrace(readFileSync(target.proc.logFile, 'utf8').slice(before));
    return { result, peakRss, ...trace };
  } finally {
    load.stop();
    await target.proc.stop();
  }
}

function rows(name, { result, peakRss, pauses, promoted, promotedLater }) {
  const perRequest = Math.round(promoted / result.responses);
  // The second half's requests, at the run's even rate.
  const later = Math.round((2 * promotedLater) / result.responses);
  const head = `| ${name} | ${Math.round(result.rps)} | ${result.p99.toFixed(2)} | ${perRequest} | ${later} | ${Math.round(peakRss / 2 ** 20)} |`;
  return [...pauses].map(([collection, all], index) => {
    const sorted = all.sort((a, b) => a - b);
    const total = sorted.reduce((a, b) => a + b, 0);
    const share = ((100 * total) / (seconds * 1000)).toFixed(1);
    const cells = `${collection} | ${sorted.length} | ${percentile(sorted, 0.5).toFixed(2)} | ${percentile(sorted, 0.99).toFixed(2)} | ${sorted.at(-1).toFixed(2)} | ${Math.round(total)} (${share} %) |`;
    return `${index === 0 ? head : '| | | | | | |'} ${cells}`;
  });
}

function report(chart, why, node, scenarios) {
  const pod = why
    ? `no pod memory limit (${why})`
    : `as in the pod (${chart.memory}, NODE_OPTIONS=${chart.nodeOptions || '(none)'}, node ${chart.nodeArgs.join(' ')})`;
  return [
    '# The garbage collector under load, at 16 connections',
    '',
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, Node ${node.version}, ${seconds} s after ${SEED} warm-up requests, ${pod}; from \`--trace-gc-nvp\`. Promoted: bytes a request the scavenges moved to the old generation, over the run and over its second half. A pause is the main thread's stop (a full GC's incremental marking steps come on top). Peak RSS: the process's high-water mark, start and warm-up included.`,
    ...scenarios.flatMap(({ title, measured }) => [
      '',
      `## ${title}`,
      '',
      '| target | req/s | p99 ms | promoted B/req | 2nd half | peak RSS MiB | collection | count | median pause ms | p99 | max | total ms (share of the run) |',
      '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
      ...measured.flatMap(([name, m]) => rows(name, m)),
    ]),
    '',
  ].join('\n');
}

async function startTarget(name, build, dir, url) {
  const common = {
    dir: join(dir, name),
    token: TOKEN,
    databaseUrl: url,
    nodeArgs: ['--trace-gc-nvp'],
  };
  mkdirSync(common.dir, { recursive: true });
  if (name === 'service') {
    return startService({ name, main: join(build, 'dist/bundle/main.js'), ...common });
  }
  return startRaw({ name, script: 'nest-floor.mjs', build, ...common });
}

/** Each target in turn on a fresh store: [name, what measure() found]. */
async function runScenario({ kind, postgres }, build, dir) {
  const measured = [];
  for (const name of ['service', 'nest-floor']) {
    if (postgres) await recreateDatabase(postgres.adminUrl, 'plantbench_gc');
    const url = postgres && databaseUrl(postgres.adminUrl, 'plantbench_gc');
    const own = join(dir, `${kind}-${postgres ? 'pg' : 'sqlite'}`);
    measured.push([name, await measure(await startTarget(name, build, own, url), kind)]);
  }
  return measured;
}

async function main() {
  await ensureInstalled();
  const node = targetNode('24');
  setTargetNode(node.path);
  const dir = join(dataParent(), `plant-store-gc-${Date.now()}`);
  const chart = chartPod(ROOT);
  const scenarios = [{ title: 'POST /plants, SQLite', kind: 'post' }];
  let postgres;
  let why;
  try {
    const build = await snapshotBuild(dir, node.sqlitePackage);
    why = enablePod(chart);
    postgres = await findPostgres();
    if (postgres) {
      scenarios.push({ title: 'POST /plants, PostgreSQL', kind: 'post', postgres });
      scenarios.push({ title: 'GET /plants/{id}, PostgreSQL', kind: 'get', postgres });
    } else console.log('no PostgreSQL server found: SQLite only');
    for (const scenario of scenarios) scenario.measured = await runScenario(scenario, build, dir);
  } finally {
    if (postgres) await dropDatabase(postgres.adminUrl, 'plantbench_gc');
    rmSync(dir, { recursive: true, force: true });
  }
  const text = report(chart, why, node, scenarios);
  writeFileSync(join(BENCH, 'results', 'gc-pauses.md'), text);
  console.log(`${text}\nwritten: bench/results/gc-pauses.md`);
}

await main();
