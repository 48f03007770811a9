/**
 * The container contract without a container engine: the built app (dist/, node_modules,
 * package.json) is laid out like the image's /app, owned by root with no write bits, and run as
 * uid/gid 1000 with the image's environment. It must start, serve, stop on SIGTERM, and write
 * only to its data, repos and tmp folders, as it must on a read-only root filesystem.
 * Needs root (to switch user with setpriv from util-linux) and `npm run build` first.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BoundPorts,
  type ServiceProcess,
  spawnService,
  untilHealthy,
} from './support/service-process.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
const APP_UID = 1000;
const APP_GID = 1000;
const TOKEN = 'container-test-token-0123456789abcdefghij'; // 40 characters

function whyNotRunnable(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux (setpriv and /proc)';
  if (process.getuid?.() !== 0) return 'needs root to run the app as uid 1000 (CI runs as root)';
  if (spawnSync('setpriv', ['--version']).status !== 0) return 'needs setpriv from util-linux';
  return undefined;
}
const skipReason = whyNotRunnable();

/** Every entry under root (symlinks not followed) with type, mode, size and mtime. */
function snapshot(root: string): string[] {
  const entries: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const file = path.join(dir, name);
      const st = lstatSync(file);
      entries.push(
        `${path.relative(root, file)} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.size} ${st.mtimeMs}`,
      );
      if (st.isDirectory()) walk(file);
    }
  };
  walk(root);
  return entries;
}

const CONTAINER_ROOT_PREFIX = 'plant-store-container-';
let containerRoot = '';
const ownRoot = (file: string): boolean => file === containerRoot;

/** Files and folders under dir owned by the app user, skipping the folders it may write. */
function ownedByApp(dir: string, allowed: string[]): string[] {
  const found: string[] = [];
  const walk = (current: string): void => {
    let names: string[];
    try {
      names = readdirSync(current);
    } catch {
      return; // vanished or unreadable: not ours
    }
    for (const name of names) {
      const file = path.join(current, name);
      if (allowed.includes(file)) continue;
      // Another run of this very test on the same machine (a second checkout, CI beside a
      // developer) writes into its own root as uid 1000 too: not this app's doing.
      if (current === dir && name.startsWith(CONTAINER_ROOT_PREFIX) && !ownRoot(file)) continue;
      let st;
      try {
        st = lstatSync(file);
      } catch {
        continue;
      }
      if (st.uid === APP_UID && st.mtimeMs >= startedAt) found.push(file);
      if (st.isDirectory()) walk(file);
    }
  };
  walk(dir);
  return found;
}
let startedAt = Date.now();

describe.skipIf(skipReason !== undefined)(
  `container contract: uid 1000, read-only app folder${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    let root: string;
    let appDir: string;
    let configDir: string;
    const writable: Record<'data' | 'repos' | 'tmp', string> = { data: '', repos: '', tmp: '' };
    let ports: BoundPorts;
    let service: ServiceProcess;
    let child: ChildProcess;
    let before: string[];

    beforeAll(async () => {
      const mainJs = path.join(repoRoot, 'dist', 'bundle', 'main.js');
      if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run npm run build first`);

      // The image's layout: /app (root-owned, read-only), /app/config, and the writable mounts.
      root = mkdtempSync(path.join(tmpdir(), CONTAINER_ROOT_PREFIX));
      containerRoot = root;
      chmodSync(root, 0o755);
      appDir = path.join(root, 'app');
      configDir = path.join(root, 'config');
      mkdirSync(appDir);
      cpSync(path.join(repoRoot, 'dist'), path.join(appDir, 'dist'), { recursive: true });
      cpSync(path.join(repoRoot, 'package.json'), path.join(appDir, 'package.json'));
      // node_modules is large: linked, and root-owned without write bits for others already.
      symlinkSync(path.join(repoRoot, 'node_modules'), path.join(appDir, 'node_modules'));
      mkdirSync(configDir);
      writeFileSync(path.join(configDir, 'mcp-servers.json'), '{"mcpServers":{}}\n');
      for (const name of ['data', 'repos', 'tmp'] as const) {
        writable[name] = path.join(root, name);
        mkdirSync(writable[name]);
        chownSync(writable[name], APP_UID, APP_GID);
      }
      // No write bits anywhere in the app and config folders: like a read-only root filesystem.
      spawnSync('chmod', ['-R', 'a-w', appDir, configDir]);
      before = snapshot(appDir).concat(snapshot(configDir));

      startedAt = Date.now() - 1000;
      service = await spawnService({
        command: 'setpriv',
        args: [
          `--reuid=${APP_UID}`,
          `--regid=${APP_GID}`,
          '--clear-groups',
          process.execPath,
          // The image's command line (Dockerfile CMD).
          '--initial-old-space-size=128',
          'dist/bundle/main.js',
        ],
        cwd: appDir,
        // Ports 0: the start-up line says which ones the kernel gave (logged at warn too).
        startLine: 'Plant Store listening',
        // Only what the image sets plus the test's ports and folders; nothing of ours leaks in.
        env: {
          PATH: '/usr/local/bin:/usr/bin:/bin',
          NODE_ENV: 'production',
          NODE_OPTIONS: '--max-semi-space-size=16',
          HOST: '127.0.0.1',
          API_TOKENS: TOKEN,
          DATA_DIR: writable.data,
          SERVICE_REPOS_DIR: writable.repos,
          SERVICE_CONFIG_DIR: configDir,
          TMPDIR: writable.tmp,
          HOME: writable.tmp,
          NPM_CONFIG_CACHE: path.join(writable.tmp, '.npm'),
          PORT: '0',
          SERVICE_HEALTH_CHECK_PORT: '0',
          SERVICE_METRICS_PORT: '0',
          SERVICE_LOG_LEVEL: 'warn',
        },
      });
      child = service.child;
      ports = await untilHealthy(service, 'the app');
    });

    afterAll(async () => {
      await service?.stop('SIGKILL');
      if (root) {
        spawnSync('chmod', ['-R', 'u+w', root]);
        rmSync(root, { recursive: true, force: true });
      }
    });

    it('runs as uid/gid 1000 with no supplementary groups', () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      expect(status).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
      expect(status).toMatch(/^Gid:\s+1000\s+1000\s+1000\s+1000$/m);
      expect(status).toMatch(/^Groups:\s*$/m);
    });

    it('answers /health on the health port', async () => {
      const res = await fetch(`http://127.0.0.1:${ports.health}/health`);
      expect(res.status).toBe(200);
    });

    it('creates and reads a plant with the bearer token', async () => {
      const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
      const created = await fetch(`http://127.0.0.1:${ports.api}/plants`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ id: 1, name: 'Fern' }),
      });
      expect(created.status).toBe(200);
      expect(await created.json()).toEqual({ name: 'Fern' });
      const read = await fetch(`http://127.0.0.1:${ports.api}/plants/1`, { headers });
      expect(read.status).toBe(200);
      expect(await read.json()).toMatchObject({ name: 'Fern' });
    });

    it('stops on SIGTERM within the grace period', async () => {
      child.kill('SIGTERM');
      const timeout = new Promise<'timeout'>((resolve) =>
        setTimeout(() => resolve('timeout'), 15_000),
      );
      const result = await Promise.race([service.exited, timeout]);
      expect(result, service.output()).not.toBe('timeout');
      // Exit code 0 (a signal would be its name).
      expect(result, service.output()).toBe(0);
    });

    it('wrote to its data folder and nowhere else', () => {
      // Runs after the SIGTERM test, so every file is closed.
      expect(snapshot(appDir).concat(snapshot(configDir))).toEqual(before);
      expect(readdirSync(writable.data).length).toBeGreaterThan(0);
      const allowed = Object.values(writable);
      const stray = ['/tmp', '/var/tmp', '/dev/shm', tmpdir()]
        .filter((dir, i, all) => existsSync(dir) && all.indexOf(dir) === i)
        .flatMap((dir) => ownedByApp(dir, allowed));
      expect(stray).toEqual([]);
      for (const dir of allowed) expect(statSync(dir).uid).toBe(APP_UID);
    });
  },
);

/** The Dockerfile keeps the contract the test above proves on the built app. */
describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
  const instructions = (name: string): string[] =>
    dockerfile
      .replace(/\\\n/g, ' ')
      .split('\n')
      .filter((line) => line.startsWith(`${name} `))
      .map((line) => line.slice(name.length + 1).trim());

  it('builds on a pinned Node.js 24 major, never latest', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-[a-z]+(-slim)?$/m);
    expect(dockerfile).not.toMatch(/:latest\b/);
  });

  it('installs production dependencies only in the runtime stage', () => {
    expect(instructions('RUN').join('\n')).toContain('npm ci --omit=dev');
    expect(instructions('COPY')).toContain('--from=prod-deps /src/node_modules ./node_modules');
  });

  it('runs as 1000:1000 under tini in exec form, with a writable HOME in /tmp', () => {
    expect(instructions('USER')).toEqual(['1000:1000']);
    expect(instructions('ENTRYPOINT')).toEqual(['["/usr/bin/tini", "--"]']);
    // The chart's nodeArgs default before the script (helm/plant-store/values.yaml says why).
    expect(instructions('CMD')).toEqual([
      '["node", "--initial-old-space-size=128", "dist/bundle/main.js"]',
    ]);
    const env = instructions('ENV').join(' ');
    for (const pair of ['HOME=/tmp', 'NPM_CONFIG_CACHE=/tmp/.npm', 'NODE_ENV=production']) {
      expect(env).toContain(pair);
    }
  });
});
