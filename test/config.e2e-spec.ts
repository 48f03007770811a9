import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN, startApp, tempDir } from './support/app-process.js';
import { call } from './support/http.js';

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
      PORT: '0',
      SERVICE_HEALTH_CHECK_PORT: '1',
      SERVICE_METRICS_PORT: '2',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, output };
}

const EMPTY = '{"mcpServers": {}}';

describe('configuration errors stop the start with exit 78 and name the variable', () => {
  it.each([
    ['PORT', { PORT: 'abc' }, 'PORT must be an integer from 1 to 65535'],
    ['PORT', { PORT: '70000' }, 'PORT must be an integer from 1 to 65535'],
    [
      'SERVICE_HEALTH_CHECK_PORT',
      { SERVICE_HEALTH_CHECK_PORT: '0' },
      'SERVICE_HEALTH_CHECK_PORT must be an integer from 1 to 65535',
    ],
    [
      'SERVICE_METRICS_PORT',
      { SERVICE_METRICS_PORT: '9090.5' },
      'SERVICE_METRICS_PORT must be an integer from 1 to 65535',
    ],
    [
      'SERVICE_METRICS_PORT',
      { SERVICE_METRICS_PORT: '1' },
      'SERVICE_METRICS_PORT must differ from SERVICE_HEALTH_CHECK_PORT',
    ],
    [
      'SERVICE_LOG_LEVEL',
      { SERVICE_LOG_LEVEL: 'verbose' },
      'SERVICE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
    ],
    [
      'SERVICE_SERVER_URL',
      { SERVICE_SERVER_URL: 'https://user:pw@agents.example.com/', SERVICE_AGENT_TOKEN: SECRET },
      'SERVICE_SERVER_URL must not contain a user, password, query or fragment',
    ],
    [
      'SERVICE_SERVER_URL',
      {
        SERVICE_SERVER_URL: `https://agents.example.com/?token=${SECRET}`,
        SERVICE_AGENT_TOKEN: 'x',
      },
      'SERVICE_SERVER_URL must not contain a user, password, query or fragment',
    ],
    [
      'SERVICE_SERVER_URL',
      { SERVICE_SERVER_URL: 'http://agents.example.com', SERVICE_AGENT_TOKEN: SECRET },
      'SERVICE_SERVER_URL must be an absolute https:// URL',
    ],
    [
      'SERVICE_SERVER_URL',
      { SERVICE_SERVER_URL: 'agents.example.com', SERVICE_AGENT_TOKEN: SECRET },
      'SERVICE_SERVER_URL must be an absolute https:// URL',
    ],
    [
      'SERVICE_SERVER_URL',
      { SERVICE_AGENT_TOKEN: SECRET },
      'SERVICE_SERVER_URL is required when SERVICE_AGENT_TOKEN is set',
    ],
    [
      'SERVICE_AGENT_TOKEN',
      { SERVICE_SERVER_URL: 'https://agents.example.com' },
      'SERVICE_AGENT_TOKEN is required when SERVICE_SERVER_URL is set',
    ],
    [
      'SERVICE_AGENT_TOKEN',
      { SERVICE_AGENT_TOKEN: `${SECRET} x`, SERVICE_SERVER_URL: 'https://agents.example.com' },
      'SERVICE_AGENT_TOKEN must not contain whitespace',
    ],
    [
      'DATABASE_URL',
      { DATABASE_URL: 'mysql://db/plants' },
      'DATABASE_URL must be a postgres:// or postgresql:// URL',
    ],
    [
      'DATABASE_STARTUP_TIMEOUT_SECONDS',
      { DATABASE_STARTUP_TIMEOUT_SECONDS: 'soon' },
      'DATABASE_STARTUP_TIMEOUT_SECONDS must be a whole number of seconds',
    ],
    [
      'RATE_LIMIT_PER_MINUTE',
      { RATE_LIMIT_PER_MINUTE: '-1' },
      'RATE_LIMIT_PER_MINUTE must be a whole number',
    ],
    [
      'CORS_ORIGINS',
      { CORS_ORIGINS: 'https://docs.example.com/path' },
      'CORS_ORIGINS must be "*" or comma-separated origins',
    ],
    [
      'WEBHOOK_SECRETS',
      {
        WEBHOOK_URLS: 'https://hooks.example.com/a,https://hooks.example.com/b',
        WEBHOOK_SECRETS: `whsec_${Buffer.alloc(32).toString('base64')}`,
      },
      'WEBHOOK_SECRETS must have one entry per WEBHOOK_URLS entry (2 URLs, 1 secrets)',
    ],
    [
      'WEBHOOK_SECRETS',
      { WEBHOOK_URLS: 'https://hooks.example.com/a', WEBHOOK_SECRETS: 'whsec_short-token' },
      'WEBHOOK_SECRETS entry 1 must be whsec_ followed by base64 of 24 to 64 bytes',
    ],
    [
      'WEBHOOK_URLS',
      {
        WEBHOOK_URLS: 'ftp://hooks.example.com/a',
        WEBHOOK_SECRETS: `whsec_${Buffer.alloc(32).toString('base64')}`,
      },
      'WEBHOOK_URLS entry 1 must be an absolute http(s) URL',
    ],
    [
      'WEBHOOK_RETRY_SCHEDULE_SECONDS',
      { WEBHOOK_RETRY_SCHEDULE_SECONDS: '5,soon' },
      'WEBHOOK_RETRY_SCHEDULE_SECONDS must be comma-separated whole numbers of seconds',
    ],
    [
      'API_TOKENS',
      { API_TOKENS: 'short-token' },
      'API_TOKENS entry 1 must be sha256:<64 hex> or a plain token of at least 32 characters',
    ],
    [
      'API_TOKENS',
      { API_TOKENS: `${'a'.repeat(40)},sha256:abc` },
      'API_TOKENS entry 2 must be sha256: followed by 64 hex digits',
    ],
  ])('%s: %j', async (_name, env, message) => {
    const { code, output } = await runWith(env, EMPTY);
    expect(code).toBe(78);
    expect(output).toContain(message);
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain('short-token');
  });
});

describe('mcp-servers.json errors stop the start with exit 78 and name the JSON path', () => {
  it.each([
    [
      'invalid JSON',
      '{\n  "mcpServers": {\n    "a": }\n}',
      /mcp-servers\.json is not valid JSON: .* at line 3, column 10/,
    ],
    ['not an object', '[]', /must be a JSON object with an "mcpServers" object/],
    ['missing mcpServers', '{}', /mcpServers must be an object/],
    ['unknown top-level key', '{"mcpServers": {}, "servers": {}}', /servers is not a known key/],
    [
      'missing command',
      '{"mcpServers": {"github": {"args": []}}}',
      /mcpServers\.github\.command must be a string/,
    ],
    [
      'empty command',
      '{"mcpServers": {"github": {"command": ""}}}',
      /mcpServers\.github\.command must not be empty/,
    ],
    [
      'non-string arg',
      '{"mcpServers": {"github": {"command": "npx", "args": ["a", 2]}}}',
      /mcpServers\.github\.args\[1\] must be a string/,
    ],
    [
      'args not an array',
      '{"mcpServers": {"github": {"command": "npx", "args": "a"}}}',
      /mcpServers\.github\.args must be an array of strings/,
    ],
    [
      'non-string env',
      '{"mcpServers": {"github": {"command": "npx", "env": {"N": 1}}}}',
      /mcpServers\.github\.env\.N must be a string/,
    ],
    [
      'typo in an entry',
      '{"mcpServers": {"github": {"command": "npx", "arg": []}}}',
      /mcpServers\.github\.arg is not a known key/,
    ],
    [
      'bad server name',
      '{"mcpServers": {"my server": {"command": "npx"}}}',
      /server names are 1 to 64 of/,
    ],
    [
      'unset variable',
      '{"mcpServers": {"github": {"command": "npx", "env": {"T": "${PLANT_STORE_UNSET_VAR}"}}}}',
      /mcpServers\.github\.env\.T uses \$\{PLANT_STORE_UNSET_VAR\}, which is not set and has no default/,
    ],
  ])('%s', async (_case, file, message) => {
    const { code, output } = await runWith({}, file);
    expect(code).toBe(78);
    expect(output).toMatch(message);
  });

  it('is an error when missing from a folder SERVICE_CONFIG_DIR names', async () => {
    const { code, output } = await runWith({});
    expect(code).toBe(78);
    expect(output).toMatch(/SERVICE_CONFIG_DIR: .*mcp-servers\.json does not exist/);
  });
});

describe('several problems at once', () => {
  it('are all listed in one message', async () => {
    const { code, output } = await runWith(
      { PORT: 'x', SERVICE_LOG_LEVEL: 'loud', SERVICE_AGENT_TOKEN: SECRET },
      '{"mcpServers": {"a": {"command": 1}}}',
    );
    expect(code).toBe(78);
    for (const name of [
      'PORT',
      'SERVICE_LOG_LEVEL',
      'SERVICE_SERVER_URL',
      'mcpServers.a.command',
    ]) {
      expect(output).toContain(name);
    }
    expect(output).toMatch(/Invalid configuration \(4 problems\)/);
    expect(output).not.toContain(SECRET);
  });

  it('include a missing API_TOKENS in production', async () => {
    const { code, output } = await runWith(
      { NODE_ENV: 'production', API_TOKENS: '', PORT: 'x' },
      EMPTY,
    );
    expect(code).toBe(78);
    expect(output).toContain('PORT must be an integer');
    expect(output).toContain('API_TOKENS is required when NODE_ENV=production');
    expect(output).not.toContain(SECRET);
  });
});

describe('valid configurations start', () => {
  it('with MCP variables expanded from the environment and defaults applied', async () => {
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
    expect(app.output()).not.toContain('ghp_value');
    await app.stop();
  });

  it('without SERVICE_CONFIG_DIR and no file in the default folder: no MCP servers, logged', async () => {
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
