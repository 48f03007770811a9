/**
 * A run's workspace: its data folder, the bench's own dependencies, a private copy of the
 * build, and the run's header (machine, settings, load, pod sizing).
 */
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH, ROOT } from './paths.mjs';
import { cpuQuotaProblem } from './cpu-quota.mjs';
import { chartPod, enablePod } from './pod.mjs';
import { fsType } from './stores.mjs';

/**
 * Where the stores live: the same filesystem as the checkout, so fsync costs what it costs on
 * this disk. The system's temporary folder when it is on the checkout's device (outside the
 * tree that ESLint and Prettier walk), else bench/.data; BENCH_DATA_DIR overrides both.
 */
export function dataParent() {
  if (process.env.BENCH_DATA_DIR) return process.env.BENCH_DATA_DIR;
  const tmp = os.tmpdir();
  return statSync(tmp).dev === statSync(ROOT).dev && fsType(tmp) !== 'tmpfs'
    ? tmp
    : join(BENCH, '.data');
}

export async function ensureInstalled() {
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
export async function snapshotBuild(dataRoot, sqlitePackage) {
  const dist = join(ROOT, 'dist');
  // The bundle is the build's last file (`nest build` alone deletes it): wait for it.
  const built = join(dist, 'bundle', 'main.js');
  for (let waited = 0; ; waited += 1) {
    const quiet = Date.now() - newestMtime(dist) > 3_000;
    if (existsSync(built) && quiet) break;
    if (waited === 60 && !existsSync(built)) {
      console.log('no dist/bundle/main.js: npm run build');
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
  // The baselines too, so they resolve packages as the service does (better-sqlite3 for the
  // targets' Node among them).
  cpSync(join(BENCH, 'baselines'), join(build, 'baselines'), { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(build, 'package.json'));
  copyFileSync(join(ROOT, 'openapi.json'), join(build, 'openapi.json'));
  linkModules(join(build, 'node_modules'), sqlitePackage);
  return build;
}

/**
 * --compare FILE: a copy of FILE's dist/ (another build's; FILE is its dist/main.js or its
 * dist/bundle/main.js) beside this run's build, with the same packages (so it runs on the
 * targets' Node too). Returns the copy's main file. A bundle needs the dist/ around it: it reads
 * ../../package.json and ../openapi/ from where it sits.
 */
export function snapshotOther(main, dataRoot, sqlitePackage, folder = 'build-b') {
  const build = join(dataRoot, folder);
  const bundled = basename(dirname(main)) === 'bundle';
  const dist = bundled ? dirname(dirname(main)) : dirname(main);
  cpSync(dist, join(build, 'dist'), { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(build, 'package.json'));
  linkModules(join(build, 'node_modules'), sqlitePackage);
  return join(build, 'dist', ...(bundled ? ['bundle'] : []), basename(main));
}

/**
 * The checkout's node_modules for a build copy: a link to it, or, when the targets' Node needs
 * another better-sqlite3 build (node-runtime.mjs), a folder of links to each of its packages
 * with better-sqlite3's JavaScript and that addon copied in (a copy, not a link: its
 * `bindings` lookup starts from its own path).
 */
export function linkModules(target, sqlitePackage) {
  const modules = join(ROOT, 'node_modules');
  if (!sqlitePackage) {
    symlinkSync(modules, target, 'dir');
    return;
  }
  mkdirSync(target, { recursive: true });
  for (const name of readdirSync(modules)) {
    if (name !== 'better-sqlite3') symlinkSync(join(modules, name), join(target, name));
  }
  const copy = join(target, 'better-sqlite3');
  for (const part of ['package.json', 'lib', 'build/Release/better_sqlite3.node']) {
    cpSync(join(sqlitePackage, part), join(copy, part), { recursive: true });
  }
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

export const loadAverage = () =>
  os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');

/** The report's header; applies the pod's sizing (--pod) and says what it could not do. */
export function describeRun(opts, dataRoot, node) {
  const meta = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: machine(dataRoot),
    settings: {
      rounds: opts.rounds,
      durationS: opts.durationS,
      warmupS: opts.warmupS,
      preload: opts.preload,
      ids: opts.ids,
    },
    loadBefore: loadAverage(),
  };
  // The targets' Node; the bench itself (and its load generator) may run on another.
  meta.machine.benchNode = meta.machine.node;
  meta.machine.node = node?.version ?? process.version;
  if (opts.pod !== 'off') {
    const chart = chartPod(ROOT);
    const pod = {
      memory: opts.pod ?? chart.memory,
      cpus: opts.podCpus ?? chart.serviceCpus,
      nodeOptions: opts.nodeOptions ?? chart.nodeOptions,
      nodeArgs: chart.nodeArgs,
    };
    const cpuWhy = pod.cpus > 0 ? cpuQuotaProblem() : undefined;
    if (cpuWhy) pod.cpus = 0;
    const why = enablePod(pod);
    meta.pod = { ...pod, why, cpuWhy };
    if (cpuWhy) console.warn(`warning: no pod CPU quota (${cpuWhy})`);
    if (why) console.warn(`warning: no pod memory limit (${why}); V8 sizes its heap from the host`);
  }
  console.log(
    `${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${meta.machine.node}; data in ${dataRoot} (${meta.machine.fsType})`,
  );
  if (meta.machine.fsType === 'tmpfs') {
    console.warn('warning: the data folder is on tmpfs; fsync costs nothing there');
  }
  return meta;
}
