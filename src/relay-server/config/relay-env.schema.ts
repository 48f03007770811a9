import { z } from 'zod';
import { requireDistinctPorts } from '../../config/shared/distinct-ports.js';
import { LOG_LEVELS } from '../../config/shared/log-levels.js';
import { parseCorsOrigins } from '../../config/shared/web-origins.js';
import { DEFAULT_FRAME_LIMITS } from '../../agent-protocol/frame-codec.js';
import { relayClusterEnvFields } from './relay-cluster-env.schema.js';
import { checkOAuthEnv, relayOAuthEnvFields } from './relay-oauth-env.schema.js';
import { tracingEnvShape } from '../../config/shared/tracing-env.js';
import {
  noColorField,
  setting,
  unsetIfEmpty,
  wholeNumberSettings,
} from '../../config/shared/env-fields.js';

// The relay server's environment (`RELAY_*`), in the conventions of `src/config/env.schema.ts`.
// The token lists of `RELAY_AGENTS` and `RELAY_CLIENTS` are checked in `load-relay-config.ts`.

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const MAX_FRAME = DEFAULT_FRAME_LIMITS.maxFrameBytes;

/** Agent and client names appear in URL paths, logs and metric labels. */
export const RELAY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const nameMessage = 'names are 1 to 64 of A-Z a-z 0-9 . _ - and start with a letter or digit';

/** JSON in an environment variable: a parse failure names the variable, not the text. */
const requiredJsonObject = <T extends z.ZodType>(name: string, what: string, schema: T) =>
  z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string({ error: `${name} is required: a JSON object mapping ${what}` })
      .transform((text, ctx) => {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          ctx.addIssue({ code: 'custom', message: `${name} must be a JSON object` });
          return z.NEVER;
        }
      })
      .pipe(schema),
  );

const agentsSchema = z.record(
  z.string().regex(RELAY_NAME, `agent ${nameMessage}`),
  z.string({ error: 'must be a string of comma-separated token entries (as API_TOKENS)' }),
  { error: 'must be a JSON object mapping agent names to token entries' },
);

const clientsSchema = z.record(
  z.string().regex(RELAY_NAME, `client ${nameMessage}`),
  z.strictObject(
    {
      tokens: z.string({ error: 'must be a string of comma-separated token entries' }),
      agents: z
        .array(z.string({ error: 'must be an agent name' }), {
          error: 'must be an array of agent names',
        })
        .min(1, 'must name at least one agent'),
    },
    { error: 'must be an object with "tokens" and "agents"' },
  ),
  { error: 'must be a JSON object mapping client names to {"tokens", "agents"}' },
);

/** A relay setting needs only its description: no groups, and its secrets are the two JSON maps. */
const S = <T extends z.ZodType>(schema: T, description: string) => setting(schema, { description });

const listenerFields = {
  ...wholeNumberSettings({
    RELAY_PORT: [0, 65535, 8443, 'Port of the agent and MCP endpoints (`0`: any free port)'],
    RELAY_HEALTH_CHECK_PORT: [0, 65535, 8081, 'Port of `/health`, `/health/live`, `/health/ready`'],
    RELAY_METRICS_PORT: [0, 65535, 9091, 'Port of `/metrics`'],
  }),
  RELAY_HOST: S(unsetIfEmpty(z.string()).default('0.0.0.0'), 'Address all three listeners bind to'),
  RELAY_BASE_PATH: setting(
    unsetIfEmpty(
      z
        .string()
        .regex(
          /^(\/[A-Za-z0-9._~-]+)+$/,
          'RELAY_BASE_PATH must be a path like /relay (segments of A-Z a-z 0-9 . _ ~ -, no trailing /)',
        ),
    ).default(''),
    { description: 'A path prefix like `/relay` for both endpoints', unset: 'none' },
  ),
  RELAY_LOG_LEVEL: S(
    unsetIfEmpty(
      z.enum(LOG_LEVELS, { error: `RELAY_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` }),
    ).default('info'),
    '`fatal` … `trace`, or `silent`',
  ),
  ...noColorField,
  RELAY_TLS_CERT_FILE: S(
    unsetIfEmpty(z.string()),
    'PEM certificate chain; with the key, `RELAY_PORT` speaks TLS',
  ),
  RELAY_TLS_KEY_FILE: S(unsetIfEmpty(z.string()), 'PEM private key of that certificate'),
  RELAY_ALLOWED_ORIGINS: S(
    unsetIfEmpty(z.string())
      .refine(
        (text) => parseCorsOrigins(text) !== undefined,
        'RELAY_ALLOWED_ORIGINS must be * or comma-separated origins like https://app.example.com',
      )
      .transform((text) => parseCorsOrigins(text)!),
    'Web origins (besides loopback) that may call the MCP endpoints, or `*`',
  ),
};

const tenantFields = {
  RELAY_AGENTS: setting(
    requiredJsonObject('RELAY_AGENTS', 'agent names to token entries', agentsSchema),
    {
      description: 'JSON: agent name → token entries as `API_TOKENS`',
      secret: true,
      unset: 'required',
    },
  ),
  // Optional when an OAuth issuer is configured (checkOAuthEnv).
  RELAY_CLIENTS: setting(
    unsetIfEmpty(
      requiredJsonObject('RELAY_CLIENTS', 'client names to {"tokens", "agents"}', clientsSchema),
    ),
    {
      description: 'JSON: client name → `{"tokens", "agents"}`; optional with OAuth',
      secret: true,
      unset: 'required',
    },
  ),
};

const limitFields = wholeNumberSettings({
  // The protocol's frame limit is the most: an agent closes a larger frame's connection (1009).
  RELAY_MAX_FRAME_BYTES: [1024, MAX_FRAME, MAX_FRAME, 'Largest frame and MCP request body'],
  RELAY_REQUEST_TIMEOUT_SECONDS: [1, 3600, 70, 'A request unanswered by then gets `-32003`'],
  RELAY_MAX_IN_FLIGHT_PER_AGENT: [1, 100_000, 256, 'Requests waiting for one agent; past it 429'],
  RELAY_MAX_IN_FLIGHT_PER_CLIENT: [1, 100_000, 32, 'Requests waiting for one client; past it 429'],
  RELAY_AGENT_PING_SECONDS: [1, 3600, 30, 'Ping interval; no pong by the next drops it'],
  // After a request timed out on a connection, a pong must come within this or it is dropped.
  RELAY_AGENT_PROBE_TIMEOUT_SECONDS: [1, 300, 5, 'After a timeout, a pong within this or it drops'],
  RELAY_SESSION_IDLE_SECONDS: [1, 604_800, 3600, 'A session unused this long ends'],
  RELAY_MAX_SESSIONS_PER_CLIENT: [1, 100_000, 100, 'Sessions per client; past it the oldest ends'],
  // Each new session writes a record to Redis and each ended one a tombstone: 2 a second
  // is far above what an SDK client opens, and keeps one client's churn in Redis to kilobytes.
  RELAY_MAX_NEW_SESSIONS_PER_CLIENT_PER_MINUTE: [1, 1e6, 120, 'New sessions of a client a minute'],
  // Bytes clients' event streams hold that the network has not taken: 16 MiB a client and
  // 128 MiB in all fit the chart's 512Mi pod beside the relay's own ~130 MiB.
  RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT: [1024, 8 * GiB, 16 * MiB, 'Bytes unsent to one client'],
  RELAY_MAX_STREAM_BUFFER_BYTES: [1024, 8 * GiB, 128 * MiB, 'The same for all clients together'],
  // Kept events count in the client's budget above: 100 sessions' 64 KiB stay well inside it.
  RELAY_STREAM_REPLAY_BYTES: [0, 64 * MiB, 64 * 1024, 'Events a session keeps for SSE resumes'],
  // About 33 KB each while a TLS handshake is under way: 2,048 stay well inside the pod.
  RELAY_MAX_CONNECTIONS: [0, 1e6, 2048, 'Open connections per listener (`0`: no cap)'],
  RELAY_MAX_CONNECTIONS_PER_ADDRESS: [0, 1e6, 256, 'The same from one address (`0`: no cap)'],
  RELAY_KEEP_ALIVE_TIMEOUT_SECONDS: [1, 3600, 65, 'Idle keep-alive connections closed after'],
  // Timed from its turn: a reconnect storm's handshakes closed sooner spent their CPU for nothing
  // and started again (bench/README.md, "The relay").
  RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS: [1, 120, 15, 'A TLS handshake not done by then is closed'],
  // Off here, where the CPU is unknown; the chart sets 250: other clients' p99 in a reconnect
  // storm of 2,048 agents several times lower than uncapped (bench/README.md, "The relay").
  RELAY_TLS_MAX_HANDSHAKES_PER_SECOND: [0, 1e6, 0, 'TLS handshakes started a second (`0`: no cap)'],
  // Under the agent's 30 s; at 250 a second 6,250 get a turn: a storm's agents wait, not retry.
  RELAY_TLS_HANDSHAKE_WAIT_SECONDS: [1, 600, 25, 'How long a connection waits for its handshake'],
  // Above the plant chart's most replicas (10) plus a rolling update's surge.
  RELAY_MAX_CONNECTIONS_PER_AGENT: [1, 100_000, 16, 'Connections of one agent (all its pods)'],
  RELAY_MAX_INVENTORY_BYTES_PER_AGENT: [
    1024,
    GiB,
    16 * MiB,
    "Bytes of an agent's inventories kept",
  ],
  RELAY_AGENT_MAX_FRAMES_PER_SECOND: [0, 1e6, 1000, 'Frames a second from one agent connection'],
  RELAY_AGENT_MAX_BYTES_PER_SECOND: [0, GiB, 4 * MiB, 'Bytes a second of unrequested frames'],
  RELAY_AGENT_MAX_INVENTORY_BYTES_PER_MINUTE: [0, GiB, 16 * MiB, 'Inventory bytes a minute'],
});

export const relayEnvSchema = z
  .object({
    ...listenerFields,
    ...tenantFields,
    ...limitFields,
    ...relayOAuthEnvFields,
    ...relayClusterEnvFields,
    ...tracingEnvShape,
  })
  .superRefine(
    (env, ctx) => {
      requireDistinctPorts(ctx, [
        ['RELAY_PORT', env.RELAY_PORT],
        ['RELAY_HEALTH_CHECK_PORT', env.RELAY_HEALTH_CHECK_PORT],
        ['RELAY_METRICS_PORT', env.RELAY_METRICS_PORT],
      ]);
      requireStreamBudgetOrder(ctx, env);
      checkOAuthEnv(env, ctx);
      if ((env.RELAY_TLS_CERT_FILE === undefined) !== (env.RELAY_TLS_KEY_FILE === undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: ['RELAY_TLS_CERT_FILE'],
          message: 'RELAY_TLS_CERT_FILE and RELAY_TLS_KEY_FILE must be set together',
        });
      }
    },
    // Run even when a field above is invalid, so every problem is listed at once.
    { when: () => true },
  );

export type RelayEnv = z.infer<typeof relayEnvSchema>;

/** A message (one frame at most) must fit a client's budget, and a client's the relay's. */
const BUDGET_ORDER = [
  'RELAY_MAX_FRAME_BYTES',
  'RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT',
  'RELAY_MAX_STREAM_BUFFER_BYTES',
] as const;

function requireStreamBudgetOrder(
  ctx: z.RefinementCtx,
  env: Partial<Record<(typeof BUDGET_ORDER)[number], number>>,
): void {
  for (const [i, name] of BUDGET_ORDER.entries()) {
    const below = BUDGET_ORDER[i - 1];
    const [least, value] = [below && env[below], env[name]];
    if (least === undefined || value === undefined || value >= least) continue;
    ctx.addIssue({ code: 'custom', path: [name], message: `${name} must be at least ${below}` });
  }
}
