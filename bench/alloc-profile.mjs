/**
 * Where the garbage comes from: a sampling allocation profile of the built service under load,
 * counting objects that were already collected (the CPU profile only shows what collecting them
 * costs). Writes results/alloc-<store>-<kind>.md.
 *
 *   node bench/alloc-profile.mjs [post|get] [sqlite|pg]     (npm run build first)
 *
 * The service runs as in the pod (lib/pod.mjs) with --inspect on loopback; this process drives
 * it with the load generator of the benchmark (lib/load-worker.mjs) and reads the profile over
 * the inspector protocol.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocationTables, inspector, sampleAllocations } from './lib/heap-sampling.mjs';
import { RUN_BASE, SEED_BASE } from './lib/ids.mjs';
import { startLoadWorker } from './lib/load.mjs';
import { chartPod, enablePod } from './lib/pod.mjs';
import { databaseUrl, dropDatabase, findPostgres, recreateDatabase } from './lib/stores.mjs';
import { startService } from './lib/targets.mjs';

const BENCH = import.meta.dirname;
const ROOT = join(BENCH, '..');
// BENCH_SERVICE=<main.js of another build> and BENCH_OUTPUT=<name>: one build against another.
const MAIN = process.env.BENCH_SERVICE ?? join(ROOT, 'dist/main.js');
const kind = process.argv[2] ?? 'post';
const store = process.argv[3] ?? 'sqlite';
if (!['post', 'get'].includes(kind) || !['sqlite', 'pg'].includes(store)) {
  console.error('usage: node bench/alloc-profile.mjs [post|get] [sqlite|pg]');
  process.exit(2);
}
const SEED = 2_000;
const SECONDS = 5;

async function main() {
  const chart = chartPod(ROOT);
  const why = enablePod(chart);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-alloc-'));
  const postgres = store === 'pg' ? await findPostgres() : undefined;
  if (store === 'pg' && !postgres) throw new Error('no PostgreSQL server found (see README.md)');
  if (postgres) await recreateDatabase(postgres.adminUrl, 'plantbench_alloc');
  const url = postgres && databaseUrl(postgres.adminUrl, 'plantbench_alloc');
  const token = 'alloc-profile-token-0123456789abcdefghij';
  const service = await startService({
    name: 'service',
    main: MAIN,
    dir,
    token,
    databaseUrl: url,
    nodeArgs: ['--inspect=127.0.0.1:0'],
  });
  const session = await inspector(service.proc.logFile);
  const load = startLoadWorker({ url: service.url, token, connections: 16 });
  try {
    await load.run({ kind: 'post', amount: SEED, runBase: SEED_BASE });
    let requests = 0;
    const profile = await sampleAllocations(session, async () => {
      const run = { kind, duration: SECONDS, runBase: RUN_BASE, readBase: SEED_BASE };
      requests = (await load.run({ ...run, readCount: SEED })).responses;
    });
    const text = [
      `# Allocations of the service, ${kind === 'get' ? 'GET /plants/{id}' : 'POST /plants'} at 16 connections, ${store}`,
      '',
      `${SECONDS} s, ${requests} requests after ${SEED} warm-up requests; V8's sampling heap profiler ` +
        'every 1 KiB, objects already collected included. ' +
        (why
          ? `No pod memory limit (${why}).`
          : `As in the pod (${chart.memory}, ${chart.nodeOptions}, ${chart.nodeArgs.join(' ')}).`),
      '',
      allocationTables(profile, requests, 'request'),
      '',
    ].join('\n');
    const output = join(
      BENCH,
      'results',
      `${process.env.BENCH_OUTPUT ?? `alloc-${store}-${kind}`}.md`,
    );
    writeFileSync(output, text);
    console.log(`${text}\nwritten: ${output}`);
  } finally {
    load.stop();
    session.close();
    await service.proc.stop();
    rmSync(dir, { recursive: true, force: true });
    if (postgres) await dropDatabase(postgres.adminUrl, 'plantbench_alloc');
  }
}

await main();
