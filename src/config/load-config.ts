import { resolve, join } from 'node:path';
import { parseApiTokens, type ParsedApiTokens } from './shared/api-tokens.js';
import { ConfigError } from './shared/config-error.js';
import { envSchema, type Env } from './env.schema.js';
import { formatIssues } from './shared/issue-path.js';
import { loadMcpServers, type McpServersLoad } from './mcp-servers.loader.js';
import { Secret } from './secret.js';
import { parseRetrySchedule, parseWebhookReceivers } from './webhook-receivers.js';
import { tracingConfigOf } from './shared/tracing-env.js';
import { APP_VERSION } from './version.js';

export const DEFAULT_CONFIG_DIR = '/app/config';

/** What the process is, by its entry point: the plant service or the webhook worker. */
export type ProcessRole = 'api' | 'webhook-worker';

type Environment = Readonly<Record<string, string | undefined>>;

/** The typed config, or one ConfigError listing every problem of the environment and files. */
export function loadConfig(
  environment: Environment,
  // Said by the entry point, never by a variable: the worker serves no API (no tokens needed),
  // and always delivers: WEBHOOK_DELIVERY is the API's setting.
  { role = 'api' }: { role?: ProcessRole } = {},
) {
  const problems: string[] = [];
  const parsed = envSchema.safeParse(environment);
  if (!parsed.success) problems.push(...formatIssues(parsed.error.issues));

  const tokens = parseApiTokens(environment.API_TOKENS);
  problems.push(...tokens.problems);
  const webhooks = parseWebhookReceivers(
    environment.WEBHOOK_URLS,
    environment.WEBHOOK_SECRETS,
    environment.WEBHOOK_ALLOW_PRIVATE_ADDRESSES === 'true',
  );
  problems.push(...webhooks.problems);
  problems.push(...externalDeliveryProblems(environment, role));

  const configDirExplicit = (environment.SERVICE_CONFIG_DIR ?? '') !== '';
  const configDir = resolve(environment.SERVICE_CONFIG_DIR || DEFAULT_CONFIG_DIR);
  const mcp = loadMcpServers(configDir, { required: configDirExplicit, environment });
  problems.push(...mcp.problems);
  if (role === 'api') problems.push(...productionTokenProblems(environment, tokens));

  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  return buildAppConfig(parsed.data, environment, {
    role,
    tokens,
    webhooks,
    mcp: { load: mcp, configDir, configDirExplicit },
  });
}

interface CheckedParts {
  role: ProcessRole;
  tokens: ParsedApiTokens;
  webhooks: ReturnType<typeof parseWebhookReceivers>;
  mcp: { load: McpServersLoad; configDir: string; configDirExplicit: boolean };
}

function externalDeliveryProblems(environment: Environment, role: ProcessRole): string[] {
  if (environment.DATABASE_URL) return [];
  if (role === 'webhook-worker') {
    return [
      'the webhook worker needs PostgreSQL (DATABASE_URL): with the embedded store one process writes and delivers',
    ];
  }
  if (environment.WEBHOOK_DELIVERY !== 'external') return [];
  return [
    'WEBHOOK_DELIVERY=external needs PostgreSQL (DATABASE_URL): the embedded store allows one process, which delivers itself',
  ];
}

function productionTokenProblems(environment: Environment, tokens: ParsedApiTokens): string[] {
  const none = tokens.digests.length === 0 && tokens.problems.length === 0;
  if (environment.NODE_ENV !== 'production' || !none) return [];
  return ['API_TOKENS is required when NODE_ENV=production (run `npm run token` to make one)'];
}

function buildAppConfig(env: Env, environment: Environment, parts: CheckedParts) {
  const { role, tokens, webhooks, mcp } = parts;
  const dataDir = resolve(env.DATA_DIR);
  return {
    nodeEnv: env.NODE_ENV,
    production: env.NODE_ENV === 'production',
    http: { host: env.HOST, port: env.PORT },
    health: { port: env.SERVICE_HEALTH_CHECK_PORT },
    metrics: { port: env.SERVICE_METRICS_PORT },
    logLevel: env.SERVICE_LOG_LEVEL,
    requestLog: env.SERVICE_REQUEST_LOG === 'true',
    noColor: env.NO_COLOR,
    dataDir,
    database: databaseConfig(env, dataDir),
    /** SHA-256 digests of the accepted API tokens; empty means "make a development token". */
    apiTokenDigests: tokens.digests,
    connections: connectionsConfig(env),
    rateLimitPerMinute: env.RATE_LIMIT_PER_MINUTE,
    corsOrigins: env.CORS_ORIGINS,
    webhooks: {
      receivers: webhooks.receivers,
      retrySchedule: parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE_SECONDS)!,
      // Who delivers: the API itself (`in-process`), another process (`external`), or the worker.
      delivery: role === 'webhook-worker' ? ('worker' as const) : env.WEBHOOK_DELIVERY,
      maxInFlightPerReceiver: env.WEBHOOK_MAX_IN_FLIGHT_PER_RECEIVER,
      maxAnswerBytes: env.WEBHOOK_MAX_ANSWER_BYTES,
      backlogCountCap: env.WEBHOOK_BACKLOG_COUNT_CAP,
      allowPrivateAddresses: env.WEBHOOK_ALLOW_PRIVATE_ADDRESSES === 'true',
    },
    agent:
      env.SERVICE_AGENT_TOKEN && env.SERVICE_SERVER_URL
        ? { token: new Secret(env.SERVICE_AGENT_TOKEN), serverUrl: new URL(env.SERVICE_SERVER_URL) }
        : undefined,
    /** Byte budgets of the agent's connection (used only while `agent` is set). */
    agentBudgets: {
      mcpStdinMaxBytes: env.SERVICE_MCP_STDIN_MAX_BYTES,
      serverSendMaxBytes: env.SERVICE_SERVER_SEND_MAX_BYTES,
      clientAnswerTimeoutMs: env.SERVICE_MCP_CLIENT_TIMEOUT_SECONDS * 1000,
    },
    mcp: {
      configDir: mcp.configDir,
      configDirExplicit: mcp.configDirExplicit,
      file: mcp.load.file,
      absent: mcp.load.absent,
      servers: mcp.load.specs,
      reposDir: resolve(env.SERVICE_REPOS_DIR),
      /** The MCP servers' base environment (child-env.ts filters it); it holds secrets. */
      parentEnv: new Secret(environment),
    },
    tracing: tracingConfigOf(env, 'plant-store'),
    version: APP_VERSION,
  };
}

function databaseConfig(env: Env, dataDir: string) {
  return env.DATABASE_URL
    ? {
        kind: 'postgres' as const,
        url: new Secret(env.DATABASE_URL),
        target: describePostgresTarget(env.DATABASE_URL),
        startupTimeoutMs: env.DATABASE_STARTUP_TIMEOUT_SECONDS * 1000,
        pool: {
          max: env.DATABASE_POOL_MAX,
          idleTimeoutMs: env.DATABASE_POOL_IDLE_SECONDS * 1000,
          maxLifetimeMs: env.DATABASE_POOL_MAX_LIFETIME_SECONDS * 1000,
        },
      }
    : { kind: 'sqlite' as const, file: join(dataDir, 'plants.sqlite') };
}

/** `postgres://user:secret@db:5432/plants` → `db:5432/plants`: the password never leaves. */
function describePostgresTarget(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

function connectionsConfig(env: Env) {
  return {
    maxConnections: env.MAX_CONNECTIONS,
    maxConnectionsPerAddress: env.MAX_CONNECTIONS_PER_ADDRESS,
    keepAliveTimeoutMs: env.KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
    probe: {
      maxConnectionsPerAddress: env.PROBE_MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: env.PROBE_HEADERS_TIMEOUT_SECONDS * 1000,
    },
  };
}
