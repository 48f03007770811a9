/**
 * `npm run bench`: the service against its baselines, on the embedded store and on PostgreSQL.
 * See bench/README.md for what it measures and how to read it; `--help` for the options.
 *
 * Every target runs as its own process for the whole run (json-server's "empty" one is
 * restarted before each of its runs, so it stays empty); the load comes from autocannon in a
 * separate process (lib/load-worker.mjs). Runs are interleaved, round after round, and the
 * figures are medians over the rounds, because the shared machines are noisy.
 *
 * One step per module under lib/: options, workspace (data folder, build copy, header),
 * run-stores, start-targets, rounds, results, profile-run.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RUN_BASE, RUN_BLOCK } from './lib/ids.mjs';
import { startLoadWorker } from './lib/load.mjs';
import { targetNode } from './lib/node-runtime.mjs';
import { options } from './lib/options.mjs';
import { setTargetNode } from './lib/processes.mjs';
import { profile } from './lib/profile-run.mjs';
import { buildReport, writeReport } from './lib/results.mjs';
import { runRounds, seedTargets, warmUp } from './lib/rounds.mjs';
import { openStores } from './lib/run-stores.mjs';
import { startTargets } from './lib/start-targets.mjs';
import {
  dataParent,
  describeRun,
  ensureInstalled,
  snapshotBuild,
  snapshotOther,
} from './lib/workspace.mjs';

async function main() {
  const opts = options();
  await ensureInstalled();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const dataRoot = join(dataParent(), `plant-store-bench-${stamp}`);
  mkdirSync(dataRoot, { recursive: true });
  const node = targetNode(opts.node);
  setTargetNode(node.path);
  const build = await snapshotBuild(dataRoot, node.sqlitePackage);
  // Copied like the build: its node_modules link then holds the targets' better-sqlite3.
  if (opts.service)
    opts.service = snapshotOther(opts.service, join(dataRoot, 'service'), node.sqlitePackage);
  if (opts.compare && opts.compare !== 'same') {
    // A list runs each build beside the service: service-b, service-c, ...
    const [first, ...more] = opts.compare.split(',');
    opts.compareLabel = first;
    opts.compare = snapshotOther(first, dataRoot, node.sqlitePackage);
    if (more.length > 24) throw new Error('--compare: at most 25 builds');
    opts.compareMore = more.map((main, i) => ({
      label: main,
      main: snapshotOther(
        main,
        dataRoot,
        node.sqlitePackage,
        `build-${String.fromCharCode(99 + i)}`,
      ),
    }));
  }
  const meta = describeRun(opts, dataRoot, node);
  const { stores, pgDatabase, dropDatabases } = await openStores(opts, meta);

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
    await startTargets({ opts, stores, dataRoot, build, token, pgDatabase, targets });
    await seedTargets({ targets, load, token, takeBlock });
    await warmUp({ opts, targets, load, token, takeBlock });
    const { scenarios, results } = await runRounds({ opts, targets, load, token, takeBlock });
    const report = buildReport({ opts, meta, stores, targets, scenarios, results, started });
    writeReport(report, opts.output);
  } finally {
    load.stop();
    await Promise.all(targets.map((t) => t.proc.stop()));
    if (!opts.keep) {
      await dropDatabases();
      rmSync(dataRoot, { recursive: true, force: true });
    }
  }
}

await main();
