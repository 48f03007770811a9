import type { JWTPayload } from 'jose';

export interface GrantRules {
  scopePrefix: string;
  agentsClaim: string | undefined;
  /** Only configured agents are granted: a scope for an unknown name reaches nothing. */
  knownAgents: ReadonlySet<string>;
}

/** Space-separated (`scope`, RFC 9068) or a JSON array (`scp`, some IdPs): a list either way. */
function words(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter((w) => w !== '');
  if (Array.isArray(value)) return value.filter((w): w is string => typeof w === 'string');
  return [];
}

/** The agents a token may reach: its `<prefix><agent>` scopes and the configured claim's names. */
export function grantedAgents(payload: JWTPayload, rules: GrantRules): Set<string> {
  const scopes = [...words(payload.scope), ...words(payload.scp)];
  const fromScopes = scopes
    .filter((scope) => scope.startsWith(rules.scopePrefix))
    .map((scope) => scope.slice(rules.scopePrefix.length));
  const fromClaim = rules.agentsClaim === undefined ? [] : words(payload[rules.agentsClaim]);
  return new Set([...fromScopes, ...fromClaim].filter((name) => rules.knownAgents.has(name)));
}

/** `sub` (RFC 9068), never `client_id`: a client named like a user would get their sessions. */
export function subjectOf(payload: JWTPayload): string | undefined {
  return typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : undefined;
}
