import { readFileSync } from 'node:fs';
import { parseApiTokens } from '../../config/shared/api-tokens.js';
import { ConfigError } from '../../config/shared/config-error.js';
import { formatIssues } from '../../config/shared/issue-path.js';
import { tracingConfigOf } from '../../config/shared/tracing-env.js';
import { APP_VERSION } from '../../config/shared/version.js';
import { clusterConfig } from './relay-cluster-env.schema.js';
import { type RelayEnv, relayEnvSchema } from './relay-env.schema.js';
import { oauthConfig } from './relay-oauth-env.schema.js';

/** An agent deployment (every pod of it connects with one of its tokens), or an MCP client. */
type Tenant = { name: string; tokenDigests: Buffer[] };
type Client = Tenant & { agents: ReadonlySet<string> };

// Throws one ConfigError listing every problem, each naming its variable and entry (main exits
// 78); relay-env.schema.ts says what each setting means. Token digests are SHA-256.
export function loadRelayConfig(environment: Readonly<Record<string, string | undefined>>) {
  const problems: string[] = [];
  const parsed = relayEnvSchema.safeParse(environment);
  if (!parsed.success) problems.push(...formatIssues(parsed.error.issues));
  const env = parsed.success ? parsed.data : undefined;

  const { agents, clients } = parseAgentsAndClients(environment, problems);
  const tls =
    env?.RELAY_TLS_CERT_FILE && env.RELAY_TLS_KEY_FILE
      ? readTls(env.RELAY_TLS_CERT_FILE, env.RELAY_TLS_KEY_FILE, problems)
      : undefined;

  if (!env || problems.length > 0) throw new ConfigError(problems);
  return { tls, agents, clients, ...settingsOf(env) };
}

/** Checked field by field, so a bad port elsewhere does not hide a bad token entry. */
function parseAgentsAndClients(
  environment: Readonly<Record<string, string | undefined>>,
  problems: string[],
): { agents: Tenant[]; clients: Client[] } {
  const fields = relayEnvSchema.shape;
  const agentsField = fields.RELAY_AGENTS.safeParse(environment.RELAY_AGENTS);
  const clientsField = fields.RELAY_CLIENTS.safeParse(environment.RELAY_CLIENTS);
  const agents: Tenant[] = Object.entries(agentsField.data ?? {}).map(([name, tokens]) => ({
    name,
    tokenDigests: digests(tokens, `RELAY_AGENTS.${name}`, problems),
  }));
  const clients: Client[] = Object.entries(clientsField.data ?? {}).map(([name, client]) => ({
    name,
    tokenDigests: digests(client.tokens, `RELAY_CLIENTS.${name}.tokens`, problems),
    agents: new Set(client.agents),
  }));
  if (agentsField.success && clientsField.success) problems.push(...crossCheck(agents, clients));
  return { agents, clients };
}

function digests(value: string, label: string, problems: string[]): Buffer[] {
  const parsed = parseApiTokens(value, label);
  problems.push(...parsed.problems);
  if (parsed.problems.length === 0 && parsed.digests.length === 0) {
    problems.push(`${label} must list at least one token entry`);
  }
  return parsed.digests;
}

/** A token identifies one agent or one client: an agent must not reach other agents' servers. */
function crossCheck(agents: Tenant[], clients: Client[]): string[] {
  const problems: string[] = [];
  const owners = new Map<string, string>();
  const claim = (digest: Buffer, owner: string) => {
    const key = digest.toString('hex');
    const previous = owners.get(key);
    if (previous !== undefined && previous !== owner) {
      problems.push(
        `${owner} has a token that ${previous} also has: a token belongs to one agent or one client`,
      );
    }
    owners.set(key, owner);
  };
  for (const agent of agents)
    agent.tokenDigests.forEach((d) => claim(d, `RELAY_AGENTS.${agent.name}`));
  for (const client of clients) {
    client.tokenDigests.forEach((d) => claim(d, `RELAY_CLIENTS.${client.name}.tokens`));
    for (const agent of client.agents) {
      if (!agents.some((a) => a.name === agent)) {
        problems.push(
          `RELAY_CLIENTS.${client.name}.agents names "${agent}", which is not in RELAY_AGENTS`,
        );
      }
    }
  }
  return problems;
}

function readTls(certFile: string, keyFile: string, problems: string[]) {
  const read = (file: string, name: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
      problems.push(`${name}: ${file} cannot be read (${code})`);
      return undefined;
    }
  };
  const cert = read(certFile, 'RELAY_TLS_CERT_FILE');
  const key = read(keyFile, 'RELAY_TLS_KEY_FILE');
  return cert !== undefined && key !== undefined ? { cert, key } : undefined;
}

function settingsOf(env: RelayEnv) {
  return {
    http: { host: env.RELAY_HOST, port: env.RELAY_PORT },
    health: { port: env.RELAY_HEALTH_CHECK_PORT },
    metrics: { port: env.RELAY_METRICS_PORT },
    allowedOrigins: env.RELAY_ALLOWED_ORIGINS === 'off' ? [] : env.RELAY_ALLOWED_ORIGINS,
    basePath: env.RELAY_BASE_PATH,
    logLevel: env.RELAY_LOG_LEVEL,
    noColor: env.NO_COLOR,
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
