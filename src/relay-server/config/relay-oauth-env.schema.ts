import { z } from 'zod';
import {
  setting,
  trueOrFalse,
  unsetIfEmpty,
  wholeNumberSettings,
} from '../../config/shared/env-fields.js';
import { isHttpsOrLoopback, urlSetting } from './secure-url.js';

// The relay's OAuth settings: with RELAY_OAUTH_ISSUER, MCP clients may also present the issuer's
// JWT access tokens (docs/relay-server.md, "Connecting an identity provider").
const httpsUrl = (name: string) =>
  urlSetting(
    (url) => isHttpsOrLoopback(url) && !url.username && !url.password && !url.search && !url.hash,
    `${name} must be an absolute https:// URL (http:// only on localhost) without user, query or fragment`,
  );

export const relayOAuthEnvFields = {
  RELAY_OAUTH_ISSUER: setting(httpsUrl('RELAY_OAUTH_ISSUER'), {
    description: "The IdP's issuer URL: its JWT access tokens are accepted too",
    unset: 'off',
  }),
  RELAY_PUBLIC_URL: setting(httpsUrl('RELAY_PUBLIC_URL'), {
    description: "The relay's URL as clients reach it: the tokens' audience",
  }),
  RELAY_OAUTH_AGENT_SCOPE_PREFIX: setting(
    unsetIfEmpty(
      z
        .string()
        .regex(
          /^[!#-[\]-~]{1,64}$/,
          'RELAY_OAUTH_AGENT_SCOPE_PREFIX must be 1 to 64 scope characters (no space, quote or backslash)',
        ),
    ).default('mcp:agent:'),
    { description: 'The scope `<prefix><agent>` grants an agent' },
  ),
  RELAY_OAUTH_AGENTS_CLAIM: setting(
    unsetIfEmpty(
      z
        .string()
        .regex(/^[A-Za-z0-9_.:/-]{1,100}$/, 'RELAY_OAUTH_AGENTS_CLAIM must be a claim name'),
    ),
    { description: 'A claim listing the agents a token may reach' },
  ),
  ...wholeNumberSettings({
    RELAY_OAUTH_CLOCK_SKEW_SECONDS: [0, 300, 30, 'Leeway on `exp`, `nbf`, `iat`'],
    RELAY_OAUTH_JWKS_REFRESH_SECONDS: [1, 3600, 30, 'Least time between two key-set fetches'],
    RELAY_OAUTH_FETCH_TIMEOUT_SECONDS: [1, 60, 5, 'Timeout of each fetch from the IdP'],
    // Real key sets and metadata are a few KiB; 1 MiB leaves room and bounds the memory.
    RELAY_OAUTH_MAX_DOCUMENT_BYTES: [1024, 67_108_864, 1_048_576, 'Largest IdP document read'],
  }),
  RELAY_OAUTH_REQUIRE_AT_JWT_TYP: setting(
    unsetIfEmpty(trueOrFalse('RELAY_OAUTH_REQUIRE_AT_JWT_TYP')).default('true'),
    { description: 'Refuse tokens whose `typ` is not `at+jwt`' },
  ),
};

type OAuthEnv = z.infer<z.ZodObject<typeof relayOAuthEnvFields>> & { RELAY_CLIENTS?: unknown };

/** Static clients, OAuth or both; OAuth needs the public URL its tokens' audience names. */
export function checkOAuthEnv(env: Partial<OAuthEnv>, ctx: z.RefinementCtx): void {
  const problem = (path: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [path], message });
  const { RELAY_CLIENTS: clients, RELAY_OAUTH_ISSUER: issuer, RELAY_PUBLIC_URL: url } = env;
  if (clients === undefined && issuer === undefined) {
    problem(
      'RELAY_CLIENTS',
      'RELAY_CLIENTS is required unless RELAY_OAUTH_ISSUER is set: a JSON object mapping client names to {"tokens", "agents"}',
    );
  }
  if (issuer !== undefined && url === undefined) {
    problem(
      'RELAY_PUBLIC_URL',
      "RELAY_PUBLIC_URL is required when RELAY_OAUTH_ISSUER is set (the tokens' audience)",
    );
  }
  // The URL serves OAuth alone: without an issuer it would be ignored without a word.
  if (url !== undefined && issuer === undefined) {
    problem(
      'RELAY_OAUTH_ISSUER',
      'RELAY_OAUTH_ISSUER is required when RELAY_PUBLIC_URL is set (the URL is used for OAuth only)',
    );
  }
}

export function oauthConfig(env: OAuthEnv) {
  if (env.RELAY_OAUTH_ISSUER === undefined || env.RELAY_PUBLIC_URL === undefined) return undefined;
  const resource = env.RELAY_PUBLIC_URL.replace(/\/+$/, '');
  const url = new URL(resource);
  return {
    issuer: env.RELAY_OAUTH_ISSUER,
    resource,
    // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
    metadataUrl: `${url.origin}/.well-known/oauth-protected-resource${url.pathname.replace(/\/+$/, '')}`,
    scopePrefix: env.RELAY_OAUTH_AGENT_SCOPE_PREFIX,
    agentsClaim: env.RELAY_OAUTH_AGENTS_CLAIM,
    clockSkewSeconds: env.RELAY_OAUTH_CLOCK_SKEW_SECONDS,
    // The least time between two key-set fetches, and the Retry-After of a 503.
    jwksRefreshMs: env.RELAY_OAUTH_JWKS_REFRESH_SECONDS * 1000,
    fetchTimeoutMs: env.RELAY_OAUTH_FETCH_TIMEOUT_SECONDS * 1000,
    maxDocumentBytes: env.RELAY_OAUTH_MAX_DOCUMENT_BYTES,
    // Refuses tokens whose `typ` is not `at+jwt` (RFC 9068), e.g. ID tokens.
    requireAtJwtTyp: env.RELAY_OAUTH_REQUIRE_AT_JWT_TYP === 'true',
  };
}
