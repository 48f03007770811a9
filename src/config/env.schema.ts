import { z } from 'zod';
import { CORS_ORIGINS_MESSAGE, parseCorsOrigins } from './cors-origins.js';
import { requireDistinctPorts } from './shared/distinct-ports.js';
import { LOG_LEVELS } from './shared/log-levels.js';
import { tracingEnvShape } from './shared/tracing-env.js';
import { parseRetrySchedule } from './webhook-receivers.js';

/**
 * The process environment, as one zod schema: it validates every variable at start and gives
 * the TypeScript type of the parsed environment. Values stay strings here; `load-config.ts`
 * turns them into the typed `AppConfig` (secrets wrapped, tokens hashed).
 */

/** 0 asks the kernel for any free port; the bound one is logged at start (tests use it). */
const port = (name: string) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `${name} must be an integer from 0 to 65535`)
    .transform(Number)
    .pipe(z.number().int().max(65535, `${name} must be an integer from 0 to 65535`));

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

/** Empty strings count as unset, as they do for most twelve-factor services. */
const IN_FLIGHT_MESSAGE = 'WEBHOOK_MAX_IN_FLIGHT_PER_RECEIVER must be a whole number from 1 to 256';

const BACKLOG_CAP_MESSAGE = 'WEBHOOK_BACKLOG_COUNT_CAP must be a whole number from 1 to 1000000';
// Below the agent's 60 s request timeout, so the MCP server can still answer its own call.
const CLIENT_ANSWER_MESSAGE =
  'SERVICE_MCP_CLIENT_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 59';
const PROBE_HEADERS_MESSAGE =
  'PROBE_HEADERS_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 60';

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const isBareUrl = (url: URL) =>
  url.username === '' && url.password === '' && url.search === '' && url.hash === '';

export const NODE_ENVS = ['development', 'production', 'test'] as const;

export const envSchema = z
  .object({
    // Any other value ran silently as development, with a development token.
    NODE_ENV: optional(
      z.enum(NODE_ENVS, { message: `NODE_ENV must be one of ${NODE_ENVS.join(', ')}` }),
    ).default('development'),
    PORT: optional(port('PORT')).default(3000),
    HOST: optional(z.string()).default('0.0.0.0'),
    DATA_DIR: optional(z.string()).default('./data'),
    DATABASE_URL: optional(
      z
        .string()
        .refine(
          (v) => /^postgres(ql)?:\/\/[^\s]+$/.test(v) && URL.canParse(v),
          'DATABASE_URL must be a postgres:// or postgresql:// URL',
        ),
    ),
    DATABASE_STARTUP_TIMEOUT_SECONDS: optional(
      z
        .string()
        .regex(/^\d+$/, 'DATABASE_STARTUP_TIMEOUT_SECONDS must be a whole number of seconds')
        .transform(Number),
    ).default(30),
    API_TOKENS: optional(z.string()),
    RATE_LIMIT_PER_MINUTE: optional(
      z
        .string()
        .regex(/^\d{1,9}$/, 'RATE_LIMIT_PER_MINUTE must be a whole number (0 turns the limit off)')
        .transform(Number),
    ).default(0),
    // Per listener (API, health, metrics); 0 turns a cap off.
    MAX_CONNECTIONS: optional(
      z
        .string()
        .regex(/^\d{1,7}$/, 'MAX_CONNECTIONS must be a whole number (0 turns the cap off)')
        .transform(Number),
    ).default(2048),
    MAX_CONNECTIONS_PER_ADDRESS: optional(
      z
        .string()
        .regex(
          /^\d{1,7}$/,
          'MAX_CONNECTIONS_PER_ADDRESS must be a whole number (0 turns the cap off)',
        )
        .transform(Number),
      // Off by default: the API usually sits behind an ingress or load balancer, whose few
      // addresses carry every client's connections.
    ).default(0),
    // The health and metrics ports: the kubelet and Prometheus come from a few addresses and
    // send a request at once, so a small cap and a short header wait cost them nothing.
    PROBE_MAX_CONNECTIONS_PER_ADDRESS: optional(
      z
        .string()
        .regex(
          /^\d{1,7}$/,
          'PROBE_MAX_CONNECTIONS_PER_ADDRESS must be a whole number (0 turns the cap off)',
        )
        .transform(Number),
    ).default(8),
    PROBE_HEADERS_TIMEOUT_SECONDS: optional(
      z
        .string()
        .regex(/^\d{1,2}$/, PROBE_HEADERS_MESSAGE)
        .transform(Number)
        .refine((n) => n >= 1 && n <= 60, PROBE_HEADERS_MESSAGE),
    ).default(2),
    CORS_ORIGINS: z
      .string()
      .optional()
      .refine((v) => parseCorsOrigins(v) !== undefined, CORS_ORIGINS_MESSAGE)
      .transform((v) => parseCorsOrigins(v)!),
    // Checked with WEBHOOK_URLS in load-config.ts (parseWebhookReceivers); secret.
    WEBHOOK_URLS: z.string().optional(),
    WEBHOOK_SECRETS: z.string().optional(),
    WEBHOOK_RETRY_SCHEDULE_SECONDS: z
      .string()
      .optional()
      .refine(
        (v) => parseRetrySchedule(v) !== undefined,
        'WEBHOOK_RETRY_SCHEDULE_SECONDS must be comma-separated whole numbers of seconds',
      ),
    WEBHOOK_DELIVERY: optional(z.enum(['in-process', 'external'])).default('in-process'),
    WEBHOOK_MAX_IN_FLIGHT_PER_RECEIVER: optional(
      z
        .string()
        .regex(/^\d{1,3}$/, IN_FLIGHT_MESSAGE)
        .transform(Number)
        .refine((n) => n >= 1 && n <= 256, IN_FLIGHT_MESSAGE),
    ).default(16),
    WEBHOOK_MAX_ANSWER_BYTES: optional(
      z
        .string()
        .regex(/^\d{1,7}$/, 'WEBHOOK_MAX_ANSWER_BYTES must be a whole number of bytes')
        .transform(Number),
    ).default(4096),
    // Pending notices are counted up to this per receiver every 5 s: a few ms of index reads.
    WEBHOOK_BACKLOG_COUNT_CAP: optional(
      z
        .string()
        .regex(/^\d{1,7}$/, BACKLOG_CAP_MESSAGE)
        .transform(Number)
        .refine((n) => n >= 1 && n <= 1_000_000, BACKLOG_CAP_MESSAGE),
    ).default(10_000),
    SERVICE_AGENT_TOKEN: optional(
      z.string().regex(/^\S+$/, 'SERVICE_AGENT_TOKEN must not contain whitespace'),
    ),
    SERVICE_SERVER_URL: optional(
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
    SERVICE_MCP_STDIN_MAX_BYTES: optional(budgetBytes('SERVICE_MCP_STDIN_MAX_BYTES')).default(
      16 * 1024 * 1024,
    ),
    SERVICE_MCP_CLIENT_TIMEOUT_SECONDS: optional(
      z
        .string()
        .regex(/^\d{1,2}$/, CLIENT_ANSWER_MESSAGE)
        .transform(Number)
        .refine((n) => n >= 1 && n <= 59, CLIENT_ANSWER_MESSAGE),
    ).default(30),
    SERVICE_SERVER_SEND_MAX_BYTES: optional(budgetBytes('SERVICE_SERVER_SEND_MAX_BYTES')).default(
      16 * 1024 * 1024,
    ),
    SERVICE_LOG_LEVEL: optional(
      z.enum(LOG_LEVELS, {
        error: `SERVICE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`,
      }),
    ).default('info'),
    SERVICE_HEALTH_CHECK_PORT: optional(port('SERVICE_HEALTH_CHECK_PORT')).default(8080),
    SERVICE_METRICS_PORT: optional(port('SERVICE_METRICS_PORT')).default(9090),
    SERVICE_CONFIG_DIR: optional(z.string()),
    SERVICE_REPOS_DIR: optional(z.string()).default('/app/repos'),
    ...tracingEnvShape,
  })
  .superRefine(
    (env, ctx) => {
      requireDistinctPorts(ctx, [
        ['PORT', env.PORT],
        ['SERVICE_HEALTH_CHECK_PORT', env.SERVICE_HEALTH_CHECK_PORT],
        ['SERVICE_METRICS_PORT', env.SERVICE_METRICS_PORT],
      ]);
      // The agent connection is optional, but half a configuration is a mistake.
      if (env.SERVICE_AGENT_TOKEN !== undefined && env.SERVICE_SERVER_URL === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['SERVICE_SERVER_URL'],
          message: 'SERVICE_SERVER_URL is required when SERVICE_AGENT_TOKEN is set',
        });
      }
      if (env.SERVICE_SERVER_URL !== undefined && env.SERVICE_AGENT_TOKEN === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['SERVICE_AGENT_TOKEN'],
          message: 'SERVICE_AGENT_TOKEN is required when SERVICE_SERVER_URL is set',
        });
      }
      // Run these rules even when a field above is invalid, so every problem is listed at once.
    },
    { when: () => true },
  );

export type Env = z.infer<typeof envSchema>;
