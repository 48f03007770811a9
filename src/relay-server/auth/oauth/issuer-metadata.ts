import { isHttpsOrLoopback } from '../../config/secure-url.js';
import { cappedFetch } from './capped-fetch.js';

/**
 * A setting is wrong, not down: the metadata names another issuer (RELAY_OAUTH_ISSUER is
 * misspelled) or a key set the relay must not fetch. Retrying does not help; the operator must.
 */
export class IdpConfigurationError extends Error {}

export interface FetchLimits {
  timeoutMs: number;
  maxBytes: number;
}

/**
 * The authorization server's `jwks_uri`, from its metadata: RFC 8414 first, then the two
 * OpenID Connect Discovery locations, in the order the MCP authorization specification gives.
 * A document counts only when its `issuer` is exactly the configured one (RFC 8414 §3.3).
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/**
 * Throws IdpConfigurationError when a document names another issuer (and none this one) or an
 * insecure `jwks_uri`; any other error when no location answers usable metadata (503).
 */
export async function discoverJwksUri(issuer: string, limits: FetchLimits): Promise<URL> {
  const unusable: string[] = [];
  let otherIssuer: string | undefined;
  for (const location of [...new Set(metadataUrls(issuer))]) {
    const response = await cappedFetch(
      location,
      {
        headers: { Accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(limits.timeoutMs),
      },
      limits.maxBytes,
    );
    const metadata = response.ok ? parseObject(await response.text()) : {};
    if (metadata.issuer === issuer && typeof metadata.jwks_uri === 'string') {
      return secureJwksUri(metadata.jwks_uri);
    }
    if (typeof metadata.issuer === 'string') {
      otherIssuer ??= `${location} names "${metadata.issuer}"`;
    }
    unusable.push(`${location}: ${response.status}`);
  }
  if (otherIssuer !== undefined) {
    throw new IdpConfigurationError(
      `RELAY_OAUTH_ISSUER is "${issuer}" but ${otherIssuer.slice(0, 300)}: set it to the issuer exactly`,
    );
  }
  throw new Error(`no metadata naming issuer ${issuer} with a jwks_uri (${unusable.join(', ')})`);
}

/** The same rule as for the issuer: keys fetched in clear could be swapped on the way. */
function secureJwksUri(text: string): URL {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (url && isHttpsOrLoopback(url)) return url;
  throw new IdpConfigurationError(
    `the issuer's jwks_uri "${text.slice(0, 300)}" is not https:// (http:// only on localhost)`,
  );
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
