import { readFileSync } from 'node:fs';
import { parseApiTokens } from '../../config/shared/api-tokens.js';
import { ConfigError } from '../../config/shared/config-error.js';
import { formatIssues } from '../../config/shared/issue-path.js';
import {
  buildRelayConfig,
  type RelayAgentConfig,
  type RelayClientConfig,
  type RelayConfig,
} from './relay-config.js';
import { relayEnvSchema } from './relay-env.schema.js';

/**
 * Validates the relay server's environment and returns its typed config, or throws one
 * ConfigError listing every problem (main exits 78), each naming its variable and entry.
 */
export function loadRelayConfig(
  environment: Readonly<Record<string, string | undefined>>,
): RelayConfig {
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
  return buildRelayConfig(env, { tls, agents, clients });
}

/** Checked field by field, so a bad port elsewhere does not hide a bad token entry. */
function parseAgentsAndClients(
  environment: Readonly<Record<string, string | undefined>>,
  problems: string[],
): { agents: RelayAgentConfig[]; clients: RelayClientConfig[] } {
  const fields = relayEnvSchema.shape;
  const agentsField = fields.RELAY_AGENTS.safeParse(environment.RELAY_AGENTS);
  const clientsField = fields.RELAY_CLIENTS.safeParse(environment.RELAY_CLIENTS);
  const agents: RelayAgentConfig[] = Object.entries(agentsField.data ?? {}).map(
    ([name, tokens]) => ({ name, tokenDigests: digests(tokens, `RELAY_AGENTS.${name}`, problems) }),
  );
  const clients: RelayClientConfig[] = Object.entries(clientsField.data ?? {}).map(
    ([name, client]) => ({
      name,
      tokenDigests: digests(client.tokens, `RELAY_CLIENTS.${name}.tokens`, problems),
      agents: new Set(client.agents),
    }),
  );
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
function crossCheck(agents: RelayAgentConfig[], clients: RelayClientConfig[]): string[] {
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
