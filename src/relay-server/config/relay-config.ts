import type { loadRelayConfig } from './load-relay-config.js';

/** The relay server's one typed, validated configuration. Code reads this, never process.env. */
export type RelayConfig = ReturnType<typeof loadRelayConfig>;
/** An MCP client (a person, a team, an application) and the agents it may reach. */
export type RelayClientConfig = RelayConfig['clients'][number];
/** OAuth 2.1 resource server settings (RELAY_OAUTH_*); absent: static client tokens only. */
export type RelayOAuthConfig = NonNullable<RelayConfig['oauth']>;
/** Several replicas sharing state in Redis; its URL may hold a password: never logged. */
export type RelayClusterConfig = NonNullable<RelayConfig['cluster']>;

export const RELAY_CONFIG = Symbol('RELAY_CONFIG');
