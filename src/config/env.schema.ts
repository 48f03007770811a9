import { z } from 'zod';
import { CORS_ORIGINS_MESSAGE, parseCorsOrigins } from './cors-origins.js';
import { requireDistinctPorts } from './shared/distinct-ports.js';
import { noColorField, setting, unsetIfEmpty, wholeNumber } from './shared/env-fields.js';
import { LOG_LEVELS } from './shared/log-levels.js';
import { tracingEnvShape } from './shared/tracing-env.js';
import { webhookEnvFields } from './webhook-env.schema.js';

/**
 * The process environment of the service, its agent and the webhook worker, as one zod schema:
 * each setting declared once (docs/configuration.md and `.env.example` are generated from it),
 * validated at start. `load-config.ts` turns the result into the typed `AppConfig`.
 */

/** 0 asks the kernel for any free port; the bound one is logged at start (tests use it). */
const port = (name: string) =>
  wholeNumber(name, 0, 65535, `${name} must be an integer from 0 to 65535`);

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

/** A cap where 0 turns it off. */
const cap = (name: string, what = 'cap') =>
  wholeNumber(name, 0, 9_999_999, `${name} must be a whole number (0 turns the ${what} off)`);

const isBareUrl = (url: URL) =>
  url.username === '' && url.password === '' && url.search === '' && url.hash === '';

export const NODE_ENVS = ['development', 'production', 'test'] as const;

const apiFields = {
  // Any other value ran silently as development, with a development token.
  NODE_ENV: setting(
    unsetIfEmpty(
      z.enum(NODE_ENVS, { message: `NODE_ENV must be one of ${NODE_ENVS.join(', ')}` }),
    ).default('development'),
    { description: '`development`, `production` (needs `API_TOKENS`) or `test`' },
  ),
  PORT: setting(unsetIfEmpty(port('PORT')).default(3000), {
    description: 'Port of the API, `/docs`, `/openapi.json` (`0`: any free port)',
  }),
  HOST: setting(unsetIfEmpty(z.string()).default('0.0.0.0'), {
    description: 'Address all three listeners bind to',
  }),
  // Checked by parseApiTokens in load-config.ts.
  API_TOKENS: setting(unsetIfEmpty(z.string()), {
    description: 'Bearer tokens, `sha256:<hex>` entries from `npm run token`',
    secret: true,
    unset: 'a development token',
  }),
  RATE_LIMIT_PER_MINUTE: setting(
    unsetIfEmpty(
      wholeNumber(
        'RATE_LIMIT_PER_MINUTE',
        0,
        999_999_999,
        'RATE_LIMIT_PER_MINUTE must be a whole number (0 turns the limit off)',
      ),
    ).default(0),
    { description: 'API requests per client address and minute; past it 429 (`0`: off)' },
  ),
  // Per listener (API, health, metrics); 0 turns a cap off.
  MAX_CONNECTIONS: setting(unsetIfEmpty(cap('MAX_CONNECTIONS')).default(2048), {
    description: 'Open connections per listener; past it a new one is closed (`0`: off)',
  }),
  // Off by default: the API usually sits behind an ingress or load balancer, whose few
  // addresses carry every client's connections.
  MAX_CONNECTIONS_PER_ADDRESS: setting(
    unsetIfEmpty(cap('MAX_CONNECTIONS_PER_ADDRESS')).default(0),
    {
      description: 'The same from one client address, when clients connect directly',
    },
  ),
  // The health and metrics ports: the kubelet and Prometheus come from a few addresses and
  // send a request at once, so a small cap and a short header wait cost them nothing.
  PROBE_MAX_CONNECTIONS_PER_ADDRESS: setting(
    unsetIfEmpty(cap('PROBE_MAX_CONNECTIONS_PER_ADDRESS')).default(8),
    { description: 'Health and metrics ports: open connections from one address' },
  ),
  PROBE_HEADERS_TIMEOUT_SECONDS: setting(
    unsetIfEmpty(
      wholeNumber(
        'PROBE_HEADERS_TIMEOUT_SECONDS',
        1,
        60,
        'PROBE_HEADERS_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 60',
      ),
    ).default(2),
    { description: 'Health and metrics ports: request headers within this, else 408' },
  ),
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
  DATABASE_STARTUP_TIMEOUT_SECONDS: setting(
    unsetIfEmpty(
      wholeNumber(
        'DATABASE_STARTUP_TIMEOUT_SECONDS',
        0,
        Number.MAX_SAFE_INTEGER,
        'DATABASE_STARTUP_TIMEOUT_SECONDS must be a whole number of seconds',
      ),
    ).default(30),
    { description: 'How long to retry an unreachable PostgreSQL at start' },
  ),
};

const processFields = {
  SERVICE_LOG_LEVEL: setting(
    unsetIfEmpty(
      z.enum(LOG_LEVELS, { error: `SERVICE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` }),
    ).default('info'),
    { description: '`fatal` … `trace`, or `silent`' },
  ),
  SERVICE_HEALTH_CHECK_PORT: setting(
    unsetIfEmpty(port('SERVICE_HEALTH_CHECK_PORT')).default(8080),
    { description: 'Port of `/health`, `/health/live`, `/health/ready`' },
  ),
  SERVICE_METRICS_PORT: setting(unsetIfEmpty(port('SERVICE_METRICS_PORT')).default(9090), {
    description: 'Port of `/metrics`',
  }),
  ...noColorField,
  // Read by Node.js itself; declared for the docs.
  NODE_OPTIONS: setting(unsetIfEmpty(z.string()), {
    description: 'The image and chart set `--max-semi-space-size=16`',
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
        // The token goes in the Authorization header; credentials in the URL would be shown in
        // /health and logs.
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
  if (env[token] !== undefined && env[url] === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: [url],
      message: `${url} is required when ${token} is set`,
    });
  }
  if (env[url] !== undefined && env[token] === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: [token],
      message: `${token} is required when ${url} is set`,
    });
  }
}
