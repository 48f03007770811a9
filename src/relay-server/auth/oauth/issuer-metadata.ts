import { buildDiscoveryUrls } from '@modelcontextprotocol/client';
import type { RelayOAuthConfig } from '../../config/relay-config.js';
import { isHttpsOrLoopback } from '../../config/secure-url.js';
import { isObject, parseJsonOrUndefined } from '../../json-rpc/json-rpc.js';
import { cappedFetch } from './capped-fetch.js';

/** A wrong setting, not an outage (say, a misspelled RELAY_OAUTH_ISSUER): retrying won't help. */
export class IdpConfigurationError extends Error {}

// Tries the metadata locations the MCP authorization spec lists (RFC 8414, then OpenID Connect
// Discovery); a document counts only when its `issuer` is exactly ours (RFC 8414 §3.3).
export async function discoverJwksUri(
  options: Pick<RelayOAuthConfig, 'issuer' | 'fetchTimeoutMs' | 'maxDocumentBytes'>,
): Promise<URL> {
  const { issuer, fetchTimeoutMs, maxDocumentBytes } = options;
  const unusable: string[] = [];
  let otherIssuer: string | undefined;
  for (const location of buildDiscoveryUrls(issuer).map(({ url }) => url.href)) {
    const response = await cappedFetch(
      location,
      {
        headers: { Accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(fetchTimeoutMs),
      },
      maxDocumentBytes,
    );
    const parsed = response.ok ? parseJsonOrUndefined(await response.text()) : undefined;
    const metadata = isObject(parsed) ? parsed : {};
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
