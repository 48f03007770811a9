import type { CorsOrigins } from './cors-origins.js';
import type { WebhookConfig } from './webhook-receivers.js';
import type { McpServerSpec } from './mcp-servers.schema.js';
import type { Env } from './env.schema.js';
import type { Secret } from './secret.js';
import type { TracingConfig } from './shared/tracing-env.js';

export type LogLevel = Env['SERVICE_LOG_LEVEL'];

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string }
  | {
      kind: 'postgres';
      url: Secret;
      /** host:port/database, safe to log. */
      target: string;
      startupTimeoutMs: number;
      /** Connections this process may hold (DATABASE_POOL_*). */
      pool: { max: number; idleTimeoutMs: number; maxLifetimeMs: number };
    };

/** The one typed, validated configuration of the process. Code reads this, never process.env. */
export interface AppConfig {
  nodeEnv: string;
  production: boolean;
  http: { host: string; port: number };
  health: { port: number };
  metrics: { port: number };
  logLevel: LogLevel;
  /** NO_COLOR is set and not empty: logs stay JSON lines even on a terminal. */
  noColor: boolean;
  dataDir: string;
  database: DatabaseConfig;
  /** SHA-256 digests of the accepted API tokens; empty means "make a development token". */
  apiTokenDigests: Buffer[];
  /**
   * Open connections per listener, in total and from one address; 0 means no cap. The health
   * and metrics ports have their own per-address cap and header timeout (`probe`).
   */
  connections: {
    maxConnections: number;
    maxConnectionsPerAddress: number;
    probe: { maxConnectionsPerAddress: number; headersTimeoutMs: number };
  };
  /** API requests per client address and minute; 0 means no limit. */
  rateLimitPerMinute: number;
  /** Browser origins allowed by CORS (`CORS_ORIGINS`); 'off' by default. */
  corsOrigins: CorsOrigins;
  /** Receivers of the plant webhook (WEBHOOK_URLS, WEBHOOK_SECRETS); none by default. */
  webhooks: WebhookConfig;
  agent: { token: Secret; serverUrl: URL } | undefined;
  /** Byte budgets of the agent's connection (used only while `agent` is set). */
  agentBudgets: {
    /** Relayed messages waiting to be written to one MCP server's stdin. */
    mcpStdinMaxBytes: number;
    /** The connection's send queue, past which MCP servers' messages are dropped. */
    serverSendMaxBytes: number;
    /** How long an MCP server's request for its client waits for the client's answer. */
    clientAnswerTimeoutMs: number;
  };
  mcp: {
    configDir: string;
    /** SERVICE_CONFIG_DIR was set: a missing file is then an error, also on reload. */
    configDirExplicit: boolean;
    file: string;
    absent: boolean;
    servers: McpServerSpec[];
    reposDir: string;
    /**
     * The environment the config was loaded from: the MCP servers' safe base (child-env.ts
     * filters it) and `${VAR}` expansion on reload. It holds secrets, so it is wrapped.
     */
    parentEnv: Secret<Readonly<Record<string, string | undefined>>>;
  };
  /** OpenTelemetry tracing (the OTEL_* variables); undefined when off. */
  tracing: TracingConfig | undefined;
  version: string;
}

export const APP_CONFIG = Symbol('APP_CONFIG');
