import { noColorRequested } from '../../config/shared/no-color.js';
import { tracingConfigOf } from '../../config/shared/tracing-env.js';
import { APP_VERSION } from '../../config/shared/version.js';
import type { RelayEnv } from './relay-env.schema.js';
import { clusterConfig } from './relay-cluster-env.schema.js';
import { oauthConfig } from './relay-oauth-env.schema.js';

/** One agent deployment: every pod of it connects with one of these tokens (SHA-256 digests). */
export interface RelayAgentConfig {
  name: string;
  tokenDigests: Buffer[];
}

/** An MCP client (a person, a team, an application) and the agents it may reach. */
export interface RelayClientConfig {
  name: string;
  tokenDigests: Buffer[];
  agents: ReadonlySet<string>;
}

interface CheckedSettings {
  tls: { cert: string; key: string } | undefined;
  agents: RelayAgentConfig[];
  clients: RelayClientConfig[];
}

/**
 * The relay server's one typed configuration, from the validated environment (relay-env.schema.ts
 * says what each setting means). Code reads this, never process.env.
 */
export function buildRelayConfig(env: RelayEnv, checked: CheckedSettings) {
  return {
    ...checked,
    http: { host: env.RELAY_HOST, port: env.RELAY_PORT },
    health: { port: env.RELAY_HEALTH_CHECK_PORT },
    metrics: { port: env.RELAY_METRICS_PORT },
    allowedOrigins:
      env.RELAY_ALLOWED_ORIGINS?.join() === '*'
        ? ('*' as const)
        : (env.RELAY_ALLOWED_ORIGINS ?? []),
    basePath: env.RELAY_BASE_PATH,
    logLevel: env.RELAY_LOG_LEVEL,
    noColor: noColorRequested(env.NO_COLOR),
    oauth: oauthConfig(env),
    cluster: clusterConfig(env),
    maxFrameBytes: env.RELAY_MAX_FRAME_BYTES,
    requestTimeoutMs: env.RELAY_REQUEST_TIMEOUT_SECONDS * 1000,
    maxInFlightPerAgent: env.RELAY_MAX_IN_FLIGHT_PER_AGENT,
    maxInFlightPerClient: env.RELAY_MAX_IN_FLIGHT_PER_CLIENT,
    agentPingMs: env.RELAY_AGENT_PING_SECONDS * 1000,
    agentProbeTimeoutMs: env.RELAY_AGENT_PROBE_TIMEOUT_SECONDS * 1000,
    sessionIdleMs: env.RELAY_SESSION_IDLE_SECONDS * 1000,
    maxSessionsPerClient: env.RELAY_MAX_SESSIONS_PER_CLIENT,
    maxNewSessionsPerClientPerMinute: env.RELAY_MAX_NEW_SESSIONS_PER_CLIENT_PER_MINUTE,
    maxStreamBufferBytesPerClient: env.RELAY_MAX_STREAM_BUFFER_BYTES_PER_CLIENT,
    maxStreamBufferBytes: env.RELAY_MAX_STREAM_BUFFER_BYTES,
    streamReplayBytes: env.RELAY_STREAM_REPLAY_BYTES,
    connections: connectionsConfig(env),
    tlsHandshakeTimeoutMs: env.RELAY_TLS_HANDSHAKE_TIMEOUT_SECONDS * 1000,
    agentBudgets: {
      maxConnectionsPerAgent: env.RELAY_MAX_CONNECTIONS_PER_AGENT,
      maxInventoryBytesPerAgent: env.RELAY_MAX_INVENTORY_BYTES_PER_AGENT,
    },
    agentRates: {
      framesPerSecond: env.RELAY_AGENT_MAX_FRAMES_PER_SECOND,
      bytesPerSecond: env.RELAY_AGENT_MAX_BYTES_PER_SECOND,
      inventoryBytesPerMinute: env.RELAY_AGENT_MAX_INVENTORY_BYTES_PER_MINUTE,
    },
    tracing: tracingConfigOf(env, 'plant-store-relay'),
    version: APP_VERSION,
  };
}

/** Each listener's connection caps (connection-limits.ts), TLS handshakes taken in turns. */
function connectionsConfig(env: RelayEnv) {
  return {
    maxConnections: env.RELAY_MAX_CONNECTIONS,
    maxConnectionsPerAddress: env.RELAY_MAX_CONNECTIONS_PER_ADDRESS,
    keepAliveTimeoutMs: env.RELAY_KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
    tlsHandshakes: {
      perSecond: env.RELAY_TLS_MAX_HANDSHAKES_PER_SECOND,
      maxWaitMs: env.RELAY_TLS_HANDSHAKE_WAIT_SECONDS * 1000,
    },
  };
}

export type RelayConfig = ReturnType<typeof buildRelayConfig>;
/** OAuth 2.1 resource server settings (RELAY_OAUTH_*); absent: static client tokens only. */
export type RelayOAuthConfig = NonNullable<RelayConfig['oauth']>;
/** Several replicas sharing state in Redis; its URL may hold a password: never logged. */
export type RelayClusterConfig = NonNullable<RelayConfig['cluster']>;

export const RELAY_CONFIG = Symbol('RELAY_CONFIG');
