import { cappedFetch } from './capped-fetch.js';

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

/** Throws when no location answers usable metadata (the caller answers 503). */
export async function discoverJwksUri(issuer: string, limits: FetchLimits): Promise<URL> {
  const unusable: string[] = [];
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
      return new URL(metadata.jwks_uri);
    }
    unusable.push(`${location}: ${response.status}`);
  }
  throw new Error(`no metadata naming issuer ${issuer} with a jwks_uri (${unusable.join(', ')})`);
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
