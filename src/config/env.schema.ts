import { z } from 'zod';
import { CORS_ORIGINS_MESSAGE, parseCorsOrigins } from './shared/web-origins.js';
import { requireDistinctPorts } from './shared/distinct-ports.js';
import {
  noColorField,
  setting,
  trueOrFalse,
  unsetIfEmpty,
  wholeNumberSettings,
} from './shared/env-fields.js';
import { LOG_LEVELS } from './shared/log-levels.js';
import { tracingEnvShape } from './shared/tracing-env.js';
import { webhookEnvFields } from './webhook-env.schema.js';

/** The environment, each setting declared once: docs/configuration.md is generated from it. */

/** 0 asks the kernel for any free port; the bound one is logged at start (tests use it). */
const PORT = 'must be an integer from 0 to 65535';
const OFF = 'must be a whole number (0 turns the cap off)';
const CAP = 9_999_999;
const LIMIT = 'must be a whole number (0 turns the limit off)';
const SECONDS = 'must be a whole number of seconds';

/** One agent-protocol frame (4 MiB): a budget smaller than that would refuse every large message. */
const MIN_BUDGET_BYTES = 4 * 1024 * 1024;

/** A byte budget of the agent: a whole number of bytes, at least one frame. */
const budgetBytes = (name: string) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,12}$/, `${name} must be a whole number of bytes`)
    .transform(Number)
    .pipe(z.number().min(MIN_BUDGET_BYTES, `${name} must be at least ${MIN_BUDGET_BYTES} (4 MiB)`));

const isBareUrl = (url: URL) =>
  url.username === '' && url.password === '' && url.search === '' && url.hash === '';

export const NODE_ENVS = ['development', 'production', 'test'] as const;

const apiFields = {
  ...wholeNumberSettings({
    PORT: [0, 65535, 3000, 'Port of the API, `/docs`, `/openapi.json` (`0`: any free port)', PORT],
    RATE_LIMIT_PER_MINUTE: [0, 999_999_999, 0, 'API requests per address a minute', LIMIT],
    // Per listener (API, health, metrics); 0 turns a cap off.
    MAX_CONNECTIONS: [0, CAP, 2048, 'Open connections per listener (`0`: off)', OFF],
    // Off by default: the API usually sits behind an ingress or load balancer, whose few
    // addresses carry every client's connections.
    MAX_CONNECTIONS_PER_ADDRESS: [0, CAP, 0, 'The same from one client address', OFF],
    // The health and metrics ports: the kubelet and Prometheus come from a few addresses and
    // send a request at once, so a small cap and a short header wait cost them nothing.
    // Longer than the load balancer's idle timeout (60 s for AWS's ALB and ingress-nginx).
    KEEP_ALIVE_TIMEOUT_SECONDS: [1, 3600, 65, 'Idle keep-alive connections closed after'],
    PROBE_MAX_CONNECTIONS_PER_ADDRESS: [0, CAP, 8, 'Probe ports: connections per address', OFF],
    PROBE_HEADERS_TIMEOUT_SECONDS: [
      1,
      60,
      2,
      'Probe ports: headers within, else 408',
      `${SECONDS} from 1 to 60`,
    ],
  }),
  // Any other value ran silently as development, with a development token.
  NODE_ENV: setting(
    unsetIfEmpty(
      z.enum(NODE_ENVS, { message: `NODE_ENV must be one of ${NODE_ENVS.join(', ')}` }),
    ).default('development'),
    { description: '`development`, `production` (needs `API_TOKENS`) or `test`' },
  ),
  HOST: setting(unsetIfEmpty(z.string()).default('0.0.0.0'), {
    description: 'Address all three listeners bind to',
  }),
  // Checked by parseApiTokens in load-config.ts.
  API_TOKENS: setting(unsetIfEmpty(z.string()), {
    description: 'Bearer tokens, `sha256:<hex>` entries from `npm run token`',
    secret: true,
    unset: 'a development token',
  }),
  CORS_ORIGINS: setting(
    z
      .string()
      .optional()
      .refine((v) => parseCorsOrigins(v) !== undefined, CORS_ORIGINS_MESSAGE)
      .transform((v) => parseCorsOrigins(v)!),
    { description: 'Browser origins allowed from other sites, or `*`', unset: 'off' },
  ),
};

const storageFields = {
  ...wholeNumberSettings({
    DATABASE_STARTUP_TIMEOUT_SECONDS: [
      0,
      2 ** 53,
      30,
      'How long to retry an unreachable PostgreSQL at start',
      SECONDS,
    ],
    // What each process counts against max_connections. node-postgres's own default: with 5,
    // reads at 16 clients waited for a connection (GET and mix 5-7 % slower).
    DATABASE_POOL_MAX: [1, 999, 10, 'PostgreSQL connections per process (its pool)'],
    DATABASE_POOL_IDLE_SECONDS: [1, 99999, 10, 'An idle pooled connection closes after', SECONDS],
    DATABASE_POOL_MAX_LIFETIME_SECONDS: [
      1,
      999999,
      60,
      'A pooled connection is replaced after (bounds one left on an old primary)',
      SECONDS,
    ],
  }),
  DATA_DIR: setting(unsetIfEmpty(z.string()).default('./data'), {
    description: 'Embedded store (`plants.sqlite`) and the development token',
  }),
  DATABASE_URL: setting(
    unsetIfEmpty(
      z
        .string()
        .refine(
          (v) => /^postgres(ql)?:\/\/[^\s]+$/.test(v) && URL.canParse(v),
          'DATABASE_URL must be a postgres:// or postgresql:// URL',
        ),
    ),
    {
      description: 'PostgreSQL, `postgres://user:password@host:5432/db`',
      secret: true,
      unset: 'embedded',
    },
  ),
  // Read by the pg client itself; declared for the docs.
  PGPASSWORD: setting(unsetIfEmpty(z.string()), {
    description: 'PostgreSQL password when `DATABASE_URL` has none',
    secret: true,
  }),
};

const processFields = {
  ...wholeNumberSettings({
    SERVICE_HEALTH_CHECK_PORT: [
      0,
      65535,
      8080,
      'Port of `/health`, `/health/live`, `/health/ready`',
      PORT,
    ],
    SERVICE_METRICS_PORT: [0, 65535, 9090, 'Port of `/metrics`', PORT],
  }),
  SERVICE_LOG_LEVEL: setting(
    unsetIfEmpty(
      z.enum(LOG_LEVELS, { error: `SERVICE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` }),
    ).default('info'),
    { description: '`fatal` … `trace`, or `silent`' },
  ),
  // False where the ingress logs each request already: the line costs a request up to ~10 us.
  SERVICE_REQUEST_LOG: setting(unsetIfEmpty(trueOrFalse('SERVICE_REQUEST_LOG')).default('true'), {
    description: 'A log line per API request (`false`: only 5xx ones; metrics count all)',
  }),
  ...noColorField,
  // Read by Node.js itself; declared for the docs.
  NODE_OPTIONS: setting(unsetIfEmpty(z.string()), {
    description: 'The image, chart and npm scripts set `--max-semi-space-size=16`',
  }),
};

const agentFields = {
  SERVICE_AGENT_TOKEN: setting(
    unsetIfEmpty(z.string().regex(/^\S+$/, 'SERVICE_AGENT_TOKEN must not contain whitespace')),
    { description: "The agent's token for the relay server", group: 'agent', secret: true },
  ),
  SERVICE_SERVER_URL: setting(
    unsetIfEmpty(
      z
        .string()
        .refine(
          (v) => URL.canParse(v) && new URL(v).protocol === 'https:' && new URL(v).host !== '',
          'SERVICE_SERVER_URL must be an absolute https:// URL',
        )
        // The token goes in the Authorization header: URL credentials show in /health and logs.
        .refine(
          (v) => !URL.canParse(v) || isBareUrl(new URL(v)),
          'SERVICE_SERVER_URL must not contain a user, password, query or fragment',
        ),
    ),
    { description: '`https://` URL of the relay server; set both or neither', group: 'agent' },
  ),
  SERVICE_MCP_STDIN_MAX_BYTES: setting(
    unsetIfEmpty(budgetBytes('SERVICE_MCP_STDIN_MAX_BYTES')).default(16 * 1024 * 1024),
    { description: 'Bytes waiting for one MCP server to read; past it `-32005`', group: 'agent' },
  ),
  ...wholeNumberSettings(
    {
      // Below the agent's 60 s request timeout, so the MCP server can still answer its call.
      SERVICE_MCP_CLIENT_TIMEOUT_SECONDS: [
        1,
        59,
        30,
        "Wait for a client's answer to its MCP server's request",
        `${SECONDS} from 1 to 59`,
      ],
    },
    'agent',
  ),
  SERVICE_SERVER_SEND_MAX_BYTES: setting(
    unsetIfEmpty(budgetBytes('SERVICE_SERVER_SEND_MAX_BYTES')).default(16 * 1024 * 1024),
    { description: 'Bytes queued toward the relay; past it `-32005`', group: 'agent' },
  ),
  SERVICE_CONFIG_DIR: setting(unsetIfEmpty(z.string()), {
    description: 'Folder of `mcp-servers.json` (when set, the file must exist)',
    group: 'agent',
    unset: '`/app/config`',
  }),
  SERVICE_REPOS_DIR: setting(unsetIfEmpty(z.string()).default('/app/repos'), {
    description: 'Working directory of the MCP servers, when it exists',
    group: 'agent',
  }),
  // Read by Node.js itself; declared for the docs.
  NODE_EXTRA_CA_CERTS: setting(unsetIfEmpty(z.string()), {
    description: 'A private CA (PEM file) for the relay server, passed to MCP servers',
    group: 'agent',
  }),
};

export const envSchema = z
  .object({
    ...apiFields,
    ...storageFields,
    ...processFields,
    ...webhookEnvFields,
    ...agentFields,
    ...tracingEnvShape,
  })
  .superRefine(
    (env, ctx) => {
      requireDistinctPorts(ctx, [
        ['PORT', env.PORT],
        ['SERVICE_HEALTH_CHECK_PORT', env.SERVICE_HEALTH_CHECK_PORT],
        ['SERVICE_METRICS_PORT', env.SERVICE_METRICS_PORT],
      ]);
      requireAgentPair(env, ctx);
    },
    // Run these rules even when a field above is invalid, so every problem is listed at once.
    { when: () => true },
  );

export type Env = z.infer<typeof envSchema>;

/** The agent connection is optional, but half a configuration is a mistake. */
function requireAgentPair(
  env: { SERVICE_AGENT_TOKEN?: string; SERVICE_SERVER_URL?: string },
  ctx: z.RefinementCtx,
): void {
  const [token, url] = ['SERVICE_AGENT_TOKEN', 'SERVICE_SERVER_URL'] as const;
  for (const [set, missing] of [
    [token, url],
    [url, token],
  ] as const) {
    const message = `${missing} is required when ${set} is set`;
    if (env[set] !== undefined && env[missing] === undefined)
      ctx.addIssue({ code: 'custom', path: [missing], message });
  }
}
