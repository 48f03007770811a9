import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN, startApp, tempDir } from './support/app-process.js';
import { call } from './support/http.js';
import { loggedSoFar } from './support/logged-output.js';

const SECRET = 'agent-secret-value-that-must-not-leak';

/** Runs the app with a bad configuration; it must exit before listening. */
async function runWith(env: Record<string, string>, mcpFile?: string) {
  const configDir = tempDir('config');
  if (mcpFile !== undefined) writeFileSync(join(configDir, 'mcp-servers.json'), mcpFile);
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      DATA_DIR: tempDir('data'),
      SERVICE_CONFIG_DIR: configDir,
      API_TOKENS: 'a'.repeat(40),
      SERVICE_HEALTH_CHECK_PORT: '1',
      SERVICE_METRICS_PORT: '2',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  // 'close', not 'exit': both pipes are drained by then.
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

/**
 * Every rule of loadConfig is a table-driven unit test (src/config/load-config.spec.ts); these
 * spawns prove what only the process can show: a bad configuration exits 78 before listening,
 * with the whole message on stderr and no secret anywhere in the output. They run concurrently:
 * each is its own process with nothing shared.
 */
describe.concurrent(
  'configuration errors stop the start with exit 78 and the message on stderr',
  () => {
    it('one bad variable: named, its secret value not echoed', async () => {
      const { code, stdout, stderr } = await runWith(
        {
          SERVICE_SERVER_URL: `https://agents.example.com/?token=${SECRET}`,
          SERVICE_AGENT_TOKEN: 'x',
        },
        '{"mcpServers": {}}',
      );
      expect(code).toBe(78);
      expect(stderr).toContain(
        'SERVICE_SERVER_URL must not contain a user, password, query or fragment',
      );
      expect(stdout).toBe('');
      expect(stderr).not.toContain(SECRET);
    });

    it('problems of the environment and of mcp-servers.json: all listed in one message', async () => {
      const { code, stdout, stderr } = await runWith(
        { PORT: 'x', SERVICE_LOG_LEVEL: 'loud', SERVICE_AGENT_TOKEN: SECRET },
        '{"mcpServers": {"a": {"command": 1}}}',
      );
      expect(code).toBe(78);
      expect(stderr).toMatch(/Invalid configuration \(4 problems\)/);
      for (const name of [
        'PORT',
        'SERVICE_LOG_LEVEL',
        'SERVICE_SERVER_URL',
        'mcpServers.a.command',
      ]) {
        expect(stderr).toContain(name);
      }
      expect(stdout).toBe('');
      expect(`${stdout}${stderr}`).not.toContain(SECRET);
    });

    it('mcp-servers.json missing from a folder SERVICE_CONFIG_DIR names', async () => {
      const { code, stderr } = await runWith({});
      expect(code).toBe(78);
      expect(stderr).toMatch(/SERVICE_CONFIG_DIR: .*mcp-servers\.json does not exist/);
    });
  },
);

// Two services with nothing shared: side by side, each with its own context's expect.
describe.concurrent('valid configurations start', () => {
  it('with MCP variables expanded from the environment and defaults applied', async ({
    expect,
  }) => {
    const app = await startApp({
      env: { GITHUB_TOKEN: 'ghp_value' },
      mcpServers: {
        mcpServers: {
          docs: {
            command: 'true',
            args: ['--repo=${REPO:-plants}'],
            env: { TOKEN: '${GITHUB_TOKEN}' },
          },
        },
      },
    });
    expect((await call(`${app.healthUrl}/health`)).status).toBe(200);
    const output = await loggedSoFar(app, `${app.apiUrl}/plants`);
    expect(output).not.toContain('ghp_value');
    await app.stop();
  });

  it('without SERVICE_CONFIG_DIR and no file in the default folder: no MCP servers, logged', async ({
    expect,
  }) => {
    const app = await startApp({ env: { SERVICE_CONFIG_DIR: undefined } });
    const health = await call(`${app.healthUrl}/health`);
    expect(health.status).toBe(200);
    expect(health.text).toContain('"mcpServersFileFound":false');
    expect(app.output()).toMatch(/"level":30.*mcp-servers\.json does not exist: no MCP servers/);
    await app.stop();
  });
});

describe('an unwritable DATA_DIR', () => {
  it('stops the start with a clear message', async () => {
    const dir = tempDir('ro');
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, '');
    mkdirSync(join(dir, 'ok'));
    const app = await startApp({ env: { DATA_DIR: join(file, 'data') }, waitForHealth: false });
    expect(await app.exited).not.toBe(0);
    expect(app.output()).toMatch(/cannot start/);
  });
});
