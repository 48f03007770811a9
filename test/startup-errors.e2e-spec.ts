import { spawn } from 'node:child_process';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN, newToken, startApp, tempDir } from './support/app-process.js';
import { TEST_DATABASE_URL, postgresAvailable } from './support/postgres.js';
import { RefusingPostgres } from './support/refusing-postgres.js';
import { startOutcome } from './support/start-outcome.js';

const SECRET = 'hunter2hunter2';

/** Whether users other than the owner may run `file`: every folder on its path searchable. */
function reachableByOthers(file: string): boolean {
  if ((statSync(file).mode & 0o001) === 0) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
}

// Each case is its own process (and its own fixture server): they run side by side.
describe.concurrent('DATA_DIR that cannot hold the embedded store', () => {
  const cases: { name: string; dataDir: () => string }[] = [
    {
      name: 'a path under a regular file',
      dataDir: () => {
        const file = join(tempDir('not-a-dir'), 'file');
        writeFileSync(file, '');
        return join(file, 'data');
      },
    },
    {
      name: 'a folder where plants.sqlite cannot be created',
      dataDir: () => {
        const dir = tempDir('blocked');
        mkdirSync(join(dir, 'plants.sqlite'));
        return dir;
      },
    },
  ];
  it.each(cases)('exits 1 naming DATA_DIR and the path: $name', async ({ dataDir }) => {
    const dir = dataDir();
    const app = await startApp({ env: { DATA_DIR: dir }, waitForHealth: false });
    expect(await startOutcome(app)).toBe(1);
    expect(app.output()).toContain(`DATA_DIR (${dir}) must be a directory this process can write`);
    expect(app.output()).toContain(join(dir, 'plants.sqlite'));
  });

  // The case operators meet: a volume the service's uid may not write. Root writes anywhere,
  // so the service runs as `nobody` here; that needs root to start it, and a Node binary that
  // `nobody` may run (CI's Node 24 lives under /root, which only root may enter).
  it.skipIf(process.getuid?.() !== 0 || !reachableByOthers(process.execPath))(
    `exits 1 naming DATA_DIR and the path: a folder this uid may not write${
      process.getuid?.() !== 0
        ? ' (skipped: needs root)'
        : reachableByOthers(process.execPath)
          ? ''
          : ` (skipped: ${process.execPath} is not reachable by other users)`
    }`,
    async () => {
      const base = tempDir('read-only');
      chmodSync(base, 0o755);
      const dataDir = join(base, 'data');
      mkdirSync(dataDir, { mode: 0o555 });
      writeFileSync(join(base, 'mcp-servers.json'), '{"mcpServers":{}}', { mode: 0o644 });
      const child = spawn(process.execPath, [MAIN], {
        uid: 65534,
        gid: 65534,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: process.env.PATH,
          NODE_ENV: 'test',
          HOST: '127.0.0.1',
          PORT: '0',
          SERVICE_HEALTH_CHECK_PORT: '0',
          SERVICE_METRICS_PORT: '0',
          SERVICE_CONFIG_DIR: base,
          DATA_DIR: dataDir,
          API_TOKENS: newToken(),
          NO_COLOR: '1',
        },
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      // 'close', not 'exit': the pipes are read to their end (the last lines come at exit).
      const code = await new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
      expect(output).toContain(
        `DATA_DIR (${dataDir}) must be a directory this process can write (uid 65534)`,
      );
      expect(code).toBe(1);
    },
  );
});

describe('DATA_DIR naming a file, as in the quick start with no API_TOKENS', () => {
  it('exits 1 with one line that names DATA_DIR, not Nest and ours both', async () => {
    const file = join(tempDir('data-file'), 'README.md');
    writeFileSync(file, 'not a folder\n');
    const app = await startApp({
      env: { DATA_DIR: file, API_TOKENS: undefined },
      waitForHealth: false,
    });
    expect(await startOutcome(app)).toBe(1);
    const output = app.output();
    expect(output).toContain(`DATA_DIR (${file}) must be a directory this process can write`);
    // Printed once, by the service: Nest's ExceptionHandler does not repeat it.
    expect(output.match(/ENOTDIR/g)).toHaveLength(1);
    expect(output).not.toContain('ExceptionHandler');
  });
});

describe.concurrent('PostgreSQL refusing the login at start', () => {
  it('a wrong password (28P01) exits at once, saying so, without printing the password', async () => {
    const server = new RefusingPostgres();
    const port = await server.start();
    try {
      const app = await startApp({
        env: {
          DATABASE_URL: `postgres://plants:${SECRET}@127.0.0.1:${port}/plants`,
          DATABASE_STARTUP_TIMEOUT_SECONDS: '300',
        },
        waitForHealth: false,
      });
      expect(await startOutcome(app)).toBe(1);
      // The client did send the password: the refusal is about it.
      expect(server.passwords).toContain(SECRET);
      expect(app.output()).toContain(`PostgreSQL at 127.0.0.1:${port}/plants refused the login`);
      expect(app.output()).toContain('28P01');
      expect(app.output()).not.toContain(SECRET);
      expect(app.output()).not.toContain('retrying');
    } finally {
      await server.stop();
    }
  });

  describe.skipIf(!postgresAvailable)('on a real server', () => {
    const refused = async (url: URL, code: string, says: string) => {
      const app = await startApp({
        env: { DATABASE_URL: url.toString(), DATABASE_STARTUP_TIMEOUT_SECONDS: '300' },
        waitForHealth: false,
      });
      expect(await startOutcome(app)).toBe(1);
      expect(app.output()).toContain(says);
      expect(app.output()).toContain(`SQLSTATE ${code}`);
      expect(app.output()).not.toContain(SECRET);
      expect(app.output()).not.toContain('retrying');
    };

    it('a role that does not exist (28000) exits at once', async () => {
      const url = new URL(TEST_DATABASE_URL);
      url.username = 'no_such_role';
      url.password = SECRET;
      await refused(url, '28000', 'refused the login');
    });

    it('a database that does not exist (3D000) exits at once', async () => {
      const url = new URL(TEST_DATABASE_URL);
      url.pathname = '/no_such_database';
      await refused(url, '3D000', 'has no such database');
    });
  });
});

describe('a port that is in use', () => {
  it('exits 1 naming the variable that set it, not only the address', async () => {
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const app = await startApp({
        env: { SERVICE_HEALTH_CHECK_PORT: String(port) },
        waitForHealth: false,
      });
      expect(await startOutcome(app)).toBe(1);
      expect(app.output()).toContain(`SERVICE_HEALTH_CHECK_PORT=${port} on 127.0.0.1`);
      expect(app.output()).toContain('EADDRINUSE');
    } finally {
      taken.close();
    }
  });
});
