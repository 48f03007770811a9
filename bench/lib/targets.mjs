/** The processes a run compares: the service, the raw baselines, json-server and Prism. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startProcess } from './processes.mjs';

const BENCH = join(import.meta.dirname, '..');
const ROOT = join(BENCH, '..');

function baseEnv(extra) {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    NO_COLOR: '1',
    ...extra,
  };
}

/**
 * `node dist/bundle/main.js` as production runs it: NODE_ENV=production, SERVICE_LOG_LEVEL=info (one
 * JSON line per request, written to `service.log` in its data folder), API_TOKENS, an empty
 * MCP servers file. Ready is the first 200 from /health on the health port.
 */
export async function startService({
  name,
  main,
  dir,
  token,
  databaseUrl,
  nodeArgs = [],
  env: extra = {},
}) {
  const [port, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const configDir = join(dir, 'config');
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, 'mcp-servers.json'), '{"mcpServers":{}}\n');
  const env = baseEnv({
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    SERVICE_HEALTH_CHECK_PORT: String(healthPort),
    SERVICE_METRICS_PORT: String(metricsPort),
    SERVICE_CONFIG_DIR: configDir,
    SERVICE_REPOS_DIR: join(dir, 'repos'),
    SERVICE_LOG_LEVEL: 'info',
    DATA_DIR: join(dir, 'data'),
    API_TOKENS: token,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...extra,
  });
  const proc = await startProcess({
    name,
    inPod: true,
    args: [...nodeArgs, main],
    env,
    cwd: ROOT,
    logFile: join(dir, 'service.log'),
    readyUrl: `http://127.0.0.1:${healthPort}/health`,
  });
  return { url: `http://127.0.0.1:${port}`, proc, dataFile: join(dir, 'data', 'plants.sqlite') };
}

/** bench/baselines/raw-each.mjs, raw-group.mjs or nest-floor.mjs on the same kind of store. */
export async function startRaw({ name, script, build, dir, token, databaseUrl, nodeArgs = [] }) {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const env = baseEnv({
    HOST: '127.0.0.1',
    PORT: String(port),
    API_TOKENS: token,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: join(dir, 'data') }),
  });
  const proc = await startProcess({
    name,
    inPod: true,
    args: [...nodeArgs, join(build, 'baselines', script)],
    env,
    cwd: BENCH,
    logFile: join(dir, 'server.log'),
    readyUrl: `http://127.0.0.1:${port}/health`,
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}

/** json-server 0.17.4 (`--quiet`: no line per request) on `dir/db.json` with `plants` rows. */
export async function startJsonServer({ name, dir, plants }) {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const db = join(dir, 'db.json');
  writeFileSync(db, JSON.stringify({ plants }));
  const proc = await startProcess({
    name,
    args: [
      join(BENCH, 'node_modules/json-server/lib/cli/bin.js'),
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--quiet',
      db,
    ],
    env: baseEnv({ NODE_ENV: 'production' }),
    cwd: dir,
    logFile: join(dir, 'server.log'),
    readyUrl: `http://127.0.0.1:${port}/db`,
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}

/** Stoplight Prism 5.14.2 mocking the committed openapi.json; `-v silent` (see STACK-NOTES). */
export async function startPrism({ name, dir, token, spec }) {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const proc = await startProcess({
    name,
    args: [
      join(BENCH, 'node_modules/@stoplight/prism-cli/dist/index.js'),
      'mock',
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-v',
      'silent',
      spec,
    ],
    env: baseEnv({ NODE_ENV: 'production' }),
    cwd: dir,
    logFile: join(dir, 'server.log'),
    readyUrl: `http://127.0.0.1:${port}/plants/1`,
    readyHeaders: { authorization: `Bearer ${token}` },
    isReady: (status) => status < 500,
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}
