import type { LogLevel } from '../../config/shared/log-levels.js';
import type { TracingConfig } from '../../config/shared/tracing-env.js';

/** One agent deployment: every pod of it connects with one of these tokens. */
export interface RelayAgentConfig {
  name: string;
  /** SHA-256 digests of the accepted agent tokens. */
  tokenDigests: Buffer[];
}

/** An MCP client (a person, a team, an application) and the agents it may reach. */
export interface RelayClientConfig {
  name: string;
  tokenDigests: Buffer[];
  agents: ReadonlySet<string>;
}

/** OAuth 2.1 resource server settings (RELAY_OAUTH_*); absent: static client tokens only. */
export interface RelayOAuthConfig {
  /** The authorization server's issuer identifier; its metadata is discovered from it. */
  issuer: string;
  /** This relay's resource identifier (RELAY_PUBLIC_URL): the audience tokens must name. */
  resource: string;
  /** Where the protected resource metadata of `resource` is served (RFC 9728). */
  metadataUrl: string;
  scopePrefix: string;
  agentsClaim: string | undefined;
  clockSkewSeconds: number;
  /** The least time between two JWKS fetches, and the Retry-After of a 503. */
  jwksRefreshMs: number;
  fetchTimeoutMs: number;
  /** The largest metadata document or key set read from the IdP. */
  maxDocumentBytes: number;
  /** Refuse tokens whose `typ` is not `at+jwt` (RFC 9068), e.g. ID tokens. */
  requireAtJwtTyp: boolean;
}

/**
 * Several replicas sharing state in Redis (RELAY_REDIS_*); absent: one replica, all in memory.
 * `redisUrl` may hold a password: it is never logged, nor put in errors, metrics or /health.
 */
export interface RelayClusterConfig {
  redisUrl: string;
  /** How other replicas reach this one (RELAY_PORT); undefined: http(s)://127.0.0.1:<port>. */
  replicaUrl: string | undefined;
  /** A Redis command not answered by then fails (the request gets 503 + Retry-After). */
  redisTimeoutMs: number;
  /**
   * A request of a session whose replica went waits this long for a connection of the
   * session's agent on a live replica to take the session over; none by then: 503.
   */
  sessionMoveMs: number;
}

/** The relay server's one typed, validated configuration. Code reads this, never process.env. */
export interface RelayConfig {
  http: { host: string; port: number };
  health: { port: number };
  metrics: { port: number };
  /**
   * Web origins (besides loopback and RELAY_PUBLIC_URL's) whose pages may call the MCP
   * endpoints (RELAY_ALLOWED_ORIGINS); '*' for any.
   */
  allowedOrigins: readonly string[] | '*';
  /** '' or a path like `/relay`: the agent and MCP endpoints live under it. */
  basePath: string;
  logLevel: LogLevel;
  /** NO_COLOR is set and not empty: logs stay JSON lines even on a terminal. */
  noColor: boolean;
  /** PEM certificate chain and key, read at start; undefined serves plain HTTP (behind TLS). */
  tls: { cert: string; key: string } | undefined;
  agents: RelayAgentConfig[];
  clients: RelayClientConfig[];
  oauth: RelayOAuthConfig | undefined;
  cluster: RelayClusterConfig | undefined;
  /** Largest WebSocket frame from an agent and largest MCP request body from a client. */
  maxFrameBytes: number;
  requestTimeoutMs: number;
  maxInFlightPerAgent: number;
  maxInFlightPerClient: number;
  /** The relay pings each agent connection this often; no pong by the next ping drops it. */
  agentPingMs: number;
  /** After a request timed out on a connection it is pinged at once; no pong by then drops it. */
  agentProbeTimeoutMs: number;
  /** A session without a request for this long ends. */
  sessionIdleMs: number;
  /** Past this many sessions a client's least recently used one ends. */
  maxSessionsPerClient: number;
  /** Sessions (2025-11-25 `initialize`) one client may open per minute, here. */
  maxNewSessionsPerClientPerMinute: number;
  /** Bytes one client's event streams may hold that the network has not taken yet. */
  maxStreamBufferBytesPerClient: number;
  /** The same for all clients together. */
  maxStreamBufferBytes: number;
  /** Caps on each listener's open connections (0: no cap). */
  connections: { maxConnections: number; maxConnectionsPerAddress: number };
  /** A TLS connection that has not finished its handshake by then is closed. */
  tlsHandshakeTimeoutMs: number;
  /** What one agent may hold: connections, and bytes of inventory over all of them. */
  agentBudgets: { maxConnectionsPerAgent: number; maxInventoryBytesPerAgent: number };
  /** What one agent connection may send (0: no limit); past it the connection is closed. */
  agentRates: { framesPerSecond: number; bytesPerSecond: number; inventoryBytesPerMinute: number };
  /** OpenTelemetry tracing (the OTEL_* variables); undefined when off. */
  tracing: TracingConfig | undefined;
  version: string;
}

export const RELAY_CONFIG = Symbol('RELAY_CONFIG');
