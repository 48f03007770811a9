import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from './shared/config-error.js';
import { loadConfig } from './load-config.js';

/**
 * loadConfig is a pure function of the environment and one file, so its cases run here, in
 * microseconds; test/config.e2e-spec.ts keeps a few spawns for what only the process shows
 * (exit code 78, the message on stderr).
 */

const SECRET = 'agent-secret-value-that-must-not-leak';
const EMPTY = '{"mcpServers": {}}';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A SERVICE_CONFIG_DIR holding `file` as mcp-servers.json (no file when null). */
function configDir(file: string | null): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-config-'));
  dirs.push(dir);
  if (file !== null) writeFileSync(join(dir, 'mcp-servers.json'), file);
  return dir;
}

/** A valid environment (as the e2e spawns used), with `overrides` applied. */
const POSTGRES = 'postgres://plants@db:5432/plants';

function environment(overrides: Record<string, string>, file: string | null = EMPTY) {
  return {
    DATA_DIR: '/tmp/plant-data',
    SERVICE_CONFIG_DIR: configDir(file),
    API_TOKENS: 'a'.repeat(40),
    SERVICE_HEALTH_CHECK_PORT: '1',
    SERVICE_METRICS_PORT: '2',
    ...overrides,
  };
}

/** The ConfigError loadConfig throws for `env`; fails the test when it does not throw one. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('loadConfig accepted the configuration');
}

describe('loadConfig: each environment problem names its variable, without its value', () => {
  it('accepts the base environment these cases start from', () => {
    expect(() => loadConfig(environment({}))).not.toThrow();
  });

  it.each([
    ['PORT', { PORT: 'abc' }, 'PORT must be an integer from 0 to 65535'],
    ['PORT', { PORT: '70000' }, 'PORT must be an integer from 0 to 65535'],
    ['PORT', { PORT: '-1' }, 'PORT must be an integer from 0 to 65535'],
    [
      'SERVICE_HEALTH_CHECK_PORT',
      { SERVICE_HEALTH_CHECK_PORT: '65536' },
      'SERVICE_HEALTH_CHECK_PORT must be an integer from 0 to 65535',
    ],
    [
      'SERVICE_METRICS_PORT',
      { SERVICE_METRICS_PORT: '9090.5' },
      'SERVICE_METRICS_PORT must be an integer from 0 to 65535',
    ],
    [
      'SERVICE_METRICS_PORT',
      { SERVICE_METRICS_PORT: '1' },
      'SERVICE_METRICS_PORT must differ from SERVICE_HEALTH_CHECK_PORT',
    ],
    ['NODE_ENV', { NODE_ENV: 'prod' }, 'NODE_ENV must be one of development, production, test'],
    [
      'SERVICE_LOG_LEVEL',
      { SERVICE_LOG_LEVEL: 'verbose' },
      'SERVICE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
    ],
    [
      'SERVICE_REQUEST_LOG',
      { SERVICE_REQUEST_LOG: 'off' },
      'SERVICE_REQUEST_LOG must be true or false',
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
      'DATABASE_POOL_MAX',
      { DATABASE_POOL_MAX: '0' },
      'DATABASE_POOL_MAX must be a whole number from 1 to 999',
    ],
    [
      'RATE_LIMIT_PER_MINUTE',
      { RATE_LIMIT_PER_MINUTE: '-1' },
      'RATE_LIMIT_PER_MINUTE must be a whole number',
    ],
    [
      'PROBE_HEADERS_TIMEOUT_SECONDS',
      { PROBE_HEADERS_TIMEOUT_SECONDS: '0' },
      'PROBE_HEADERS_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 60',
    ],
    [
      'PROBE_MAX_CONNECTIONS_PER_ADDRESS',
      { PROBE_MAX_CONNECTIONS_PER_ADDRESS: 'few' },
      'PROBE_MAX_CONNECTIONS_PER_ADDRESS must be a whole number',
    ],
    [
      'SERVICE_MCP_STDIN_MAX_BYTES',
      { SERVICE_MCP_STDIN_MAX_BYTES: '64MiB' },
      'SERVICE_MCP_STDIN_MAX_BYTES must be a whole number of bytes',
    ],
    [
      'SERVICE_SERVER_SEND_MAX_BYTES',
      { SERVICE_SERVER_SEND_MAX_BYTES: '1048576' },
      'SERVICE_SERVER_SEND_MAX_BYTES must be at least 4194304 (4 MiB)',
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
      'WEBHOOK_URLS',
      {
        WEBHOOK_URLS: Array.from({ length: 33 }, (_, i) => `https://h.example.com/${i}`).join(),
        WEBHOOK_SECRETS: Array(33)
          .fill(`whsec_${Buffer.alloc(32).toString('base64')}`)
          .join(),
      },
      'WEBHOOK_URLS holds at most 32 receivers (33 given)',
    ],
    ...[
      'http://127.0.0.1:9000/a',
      'http://[::1]/a',
      'http://169.254.169.254/a',
      'https://localhost/a',
    ].map((url): [string, Record<string, string>, string] => [
      'WEBHOOK_URLS',
      { WEBHOOK_URLS: url, WEBHOOK_SECRETS: `whsec_${Buffer.alloc(32).toString('base64')}` },
      'WEBHOOK_URLS entry 1 is a loopback, private or link-local address: set WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true',
    ]),
    [
      'WEBHOOK_ALLOW_PRIVATE_ADDRESSES',
      { WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'yes' },
      'WEBHOOK_ALLOW_PRIVATE_ADDRESSES must be true or false',
    ],
    [
      'WEBHOOK_RETRY_SCHEDULE_SECONDS',
      { WEBHOOK_RETRY_SCHEDULE_SECONDS: '5,soon' },
      'WEBHOOK_RETRY_SCHEDULE_SECONDS must be comma-separated whole numbers of seconds',
    ],
    [
      'WEBHOOK_DELIVERY',
      { WEBHOOK_DELIVERY: 'worker' },
      'WEBHOOK_DELIVERY must be in-process or external',
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
  ])('%s: %j', (_name, overrides, message) => {
    const error = configError(environment(overrides));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(message);
    expect(error.message).toContain(message);
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain('short-token');
  });
});

describe('loadConfig: receivers on private addresses', () => {
  const secret = `whsec_${Buffer.alloc(32).toString('base64')}`;
  it('are accepted with WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true', () => {
    const urls = 'http://127.0.0.1:9000/a,http://10.0.0.5/b';
    const config = loadConfig(
      environment({
        WEBHOOK_URLS: urls,
        WEBHOOK_SECRETS: `${secret},${secret}`,
        WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      }),
    );
    expect(config.webhooks.receivers).toHaveLength(2);
    expect(config.webhooks.allowPrivateAddresses).toBe(true);
  });

  it('are checked at connect when named: a public-looking name passes the start', () => {
    const config = loadConfig(
      environment({ WEBHOOK_URLS: 'https://hooks.example.com/a', WEBHOOK_SECRETS: secret }),
    );
    expect(config.webhooks.allowPrivateAddresses).toBe(false);
  });
});

describe('loadConfig: each mcp-servers.json problem names its JSON path', () => {
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
      'unknown instances mode',
      '{"mcpServers": {"github": {"command": "npx", "instances": "per-user"}}}',
      /mcpServers\.github\.instances must be "shared" or "per-client"/,
    ],
    [
      'maxInstances out of range',
      '{"mcpServers": {"github": {"command": "npx", "maxInstances": 0}}}',
      /mcpServers\.github\.maxInstances must be at least 1/,
    ],
    [
      'bad server name',
      '{"mcpServers": {"my server": {"command": "npx"}}}',
      /server names are 1 to 64 of/,
    ],
    // Both once vanished silently (a plain object's prototype, not a key).
    [
      'server named __proto__',
      '{"mcpServers": {"__proto__": {"command": "npx"}, "github": {"command": "npx"}}}',
      /mcpServers\.__proto__: "__proto__" cannot be a server name \(every JavaScript object has a property of that name\); choose another/,
    ],
    [
      'server named constructor',
      '{"mcpServers": {"constructor": {"command": "npx"}}}',
      /mcpServers\.constructor: "constructor" cannot be a server name/,
    ],
    [
      'unset variable',
      '{"mcpServers": {"github": {"command": "npx", "env": {"T": "${PLANT_STORE_UNSET_VAR}"}}}}',
      /mcpServers\.github\.env\.T uses \$\{PLANT_STORE_UNSET_VAR\}, which is not set and has no default/,
    ],
  ])('%s', (_case, file, message) => {
    const error = configError(environment({}, file));
    expect(error.problems.some((problem) => message.test(problem))).toBe(true);
    expect(error.message).toMatch(message);
  });

  it('is an error when missing from a folder SERVICE_CONFIG_DIR names', () => {
    const error = configError(environment({}, null));
    expect(error.problems).toEqual([
      expect.stringMatching(/SERVICE_CONFIG_DIR: .*mcp-servers\.json does not exist/),
    ]);
  });
});

describe('loadConfig: several problems at once', () => {
  it('are all listed in one message', () => {
    const error = configError(
      environment(
        { PORT: 'x', SERVICE_LOG_LEVEL: 'loud', SERVICE_AGENT_TOKEN: SECRET },
        '{"mcpServers": {"a": {"command": 1}}}',
      ),
    );
    for (const name of [
      'PORT',
      'SERVICE_LOG_LEVEL',
      'SERVICE_SERVER_URL',
      'mcpServers.a.command',
    ]) {
      expect(error.message).toContain(name);
    }
    expect(error.message).toMatch(/^Invalid configuration \(4 problems\)/);
    expect(error.message).not.toContain(SECRET);
  });

  it('include a missing API_TOKENS in production', () => {
    const error = configError(environment({ NODE_ENV: 'production', API_TOKENS: '', PORT: 'x' }));
    expect(error.message).toContain('PORT must be an integer');
    expect(error.message).toContain('API_TOKENS is required when NODE_ENV=production');
    expect(error.problems).toHaveLength(2);
  });

  it('ask the webhook worker, which serves no API, for no API_TOKENS in production', () => {
    const config = loadConfig(
      environment({ NODE_ENV: 'production', API_TOKENS: '', DATABASE_URL: POSTGRES }),
      { role: 'webhook-worker' },
    );
    expect(config.production).toBe(true);
    expect(config.apiTokenDigests).toEqual([]);
  });

  it('say the worker is the worker, whatever WEBHOOK_DELIVERY (the API setting) holds', () => {
    for (const delivery of [undefined, 'in-process', 'external']) {
      const env = environment({
        DATABASE_URL: POSTGRES,
        ...(delivery ? { WEBHOOK_DELIVERY: delivery } : {}),
      });
      expect(loadConfig(env, { role: 'webhook-worker' }).webhooks.delivery).toBe('worker');
      expect(loadConfig(env).webhooks.delivery).toBe(delivery ?? 'in-process');
    }
  });

  it('refuse the webhook worker on the embedded store, naming DATABASE_URL', () => {
    expect(() => loadConfig(environment({}), { role: 'webhook-worker' })).toThrow(
      'the webhook worker needs PostgreSQL (DATABASE_URL)',
    );
  });
});

describe('loadConfig: valid configurations', () => {
  it('expand MCP variables from the environment and apply defaults', () => {
    const dir = configDir(
      JSON.stringify({
        mcpServers: {
          docs: {
            command: 'true',
            args: ['--repo=${REPO:-plants}'],
            env: { TOKEN: '${GITHUB_TOKEN}' },
          },
        },
      }),
    );
    const config = loadConfig({ SERVICE_CONFIG_DIR: dir, GITHUB_TOKEN: 'ghp_value' });
    expect(config.mcp.servers).toEqual([
      {
        name: 'docs',
        command: 'true',
        args: ['--repo=plants'],
        env: { TOKEN: 'ghp_value' },
        instances: 'shared',
        maxInstances: 3,
        instanceIdleSeconds: 300,
      },
    ]);
    expect(config).toMatchObject({
      nodeEnv: 'development',
      production: false,
      http: { host: '0.0.0.0', port: 3000 },
      health: { port: 8080 },
      metrics: { port: 9090 },
      logLevel: 'info',
      requestLog: true,
      dataDir: resolve('./data'),
      database: { kind: 'sqlite', file: join(resolve('./data'), 'plants.sqlite') },
      apiTokenDigests: [],
      rateLimitPerMinute: 0,
      connections: {
        maxConnections: 2048,
        maxConnectionsPerAddress: 0,
        probe: { maxConnectionsPerAddress: 8, headersTimeoutMs: 2000 },
      },
      agent: undefined,
      agentBudgets: { mcpStdinMaxBytes: 16_777_216, serverSendMaxBytes: 16_777_216 },
      mcp: { configDir: dir, configDirExplicit: true, absent: false },
    });
  });

  it('take 0 for every port (any free port, logged at start): no "must differ" for the 0s', () => {
    const config = loadConfig(
      environment({ PORT: '0', SERVICE_HEALTH_CHECK_PORT: '0', SERVICE_METRICS_PORT: '0' }),
    );
    expect([config.http.port, config.health.port, config.metrics.port]).toEqual([0, 0, 0]);
  });

  it('without SERVICE_CONFIG_DIR and no file in the default folder: no MCP servers', () => {
    const config = loadConfig({});
    expect(config.mcp).toMatchObject({
      configDir: '/app/config',
      configDirExplicit: false,
      absent: true,
      servers: [],
    });
  });

  it('keep the database and agent secrets wrapped; the logged target has no password', () => {
    const config = loadConfig({
      ...environment({}),
      DATABASE_URL: 'postgres://plants:db-password@db.internal/plants',
      DATABASE_STARTUP_TIMEOUT_SECONDS: '5',
      SERVICE_SERVER_URL: 'https://agents.example.com/relay',
      SERVICE_AGENT_TOKEN: SECRET,
    });
    expect(config.database).toMatchObject({
      kind: 'postgres',
      target: 'db.internal:5432/plants',
      startupTimeoutMs: 5000,
      pool: { max: 10, idleTimeoutMs: 10_000, maxLifetimeMs: 60_000 },
    });
    expect(config.agent?.serverUrl.href).toBe('https://agents.example.com/relay');
    expect(config.agent?.token.reveal()).toBe(SECRET);
    expect(JSON.stringify(config)).not.toContain(SECRET);
    expect(JSON.stringify(config)).not.toContain('db-password');
  });
});
