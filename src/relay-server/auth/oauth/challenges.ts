import { HttpStatus, InternalServerErrorException } from '@nestjs/common';
import { BearerChallengeException } from '../../../common/errors/bearer-challenge.exception.js';
import { HttpExceptionWithHeaders } from '../../../common/errors/http-exception-with-headers.js';
import type { RelayOAuthConfig } from '../../config/relay-config.js';
import { RELAY_NAME } from '../../config/relay-env.schema.js';

export const REALM = 'Bearer realm="plant-store-relay"';

/** Why a token was refused: the metric's label and the challenge's description. */
export type RefusalReason =
  | 'missing_token'
  | 'invalid_token'
  | 'expired'
  | 'wrong_audience'
  | 'unknown_key'
  | 'not_an_access_token'
  | 'insufficient_scope'
  | 'idp_unavailable'
  | 'idp_misconfigured';

const DESCRIPTIONS: Partial<Record<RefusalReason, string>> = {
  invalid_token: 'the token is not accepted',
  expired: 'the token has expired',
  wrong_audience: 'the token is not for this resource',
  unknown_key: 'the token is not signed by a key of the issuer',
  not_an_access_token: 'the token is not an access token (typ at+jwt)',
};

// The RFC 6750 challenge, naming the resource metadata (RFC 9728 §5.1) and the scope; the values
// are ours, never the client's, so nothing needs escaping.
function challenge(oauth: RelayOAuthConfig | undefined, agent: string, extra = ''): string {
  if (!oauth) return `${REALM}${extra}`;
  // The agent comes from the URL: a name that cannot be an agent's is left out of the header.
  const scope = RELAY_NAME.test(agent) ? `, scope="${oauth.scopePrefix}${agent}"` : '';
  return `${REALM}, resource_metadata="${oauth.metadataUrl}"${scope}${extra}`;
}

export function unauthorized(
  oauth: RelayOAuthConfig | undefined,
  agent: string,
  reason: RefusalReason,
): BearerChallengeException {
  if (reason === 'missing_token') {
    return new BearerChallengeException(
      'authentication required: send Authorization: Bearer <token>',
      challenge(oauth, agent),
    );
  }
  const description = DESCRIPTIONS[reason] ?? 'the token is not accepted';
  return new BearerChallengeException(
    `the bearer token is not valid: ${description}`,
    challenge(oauth, agent, `, error="invalid_token", error_description="${description}"`),
  );
}

/** 403 step-up: no scope for this agent, or no such agent (a token cannot probe names). */
export function insufficientScope(oauth: RelayOAuthConfig, agent: string) {
  return new HttpExceptionWithHeaders(
    HttpStatus.FORBIDDEN,
    'the token does not grant the scope of this agent',
    {
      'WWW-Authenticate': challenge(
        oauth,
        agent,
        ', error="insufficient_scope", error_description="the token lacks the scope of this agent"',
      ),
    },
  );
}

/** 500: the relay's OAuth settings do not fit its identity provider; retrying does not help. */
export function idpMisconfigured() {
  return new InternalServerErrorException(
    "the relay's identity provider settings are wrong (its log says how): a configuration error for its operator, not an outage",
  );
}

export function idpUnavailable(oauth: RelayOAuthConfig) {
  return new HttpExceptionWithHeaders(
    HttpStatus.SERVICE_UNAVAILABLE,
    'the identity provider cannot be reached to verify the token; retry later',
    { 'Retry-After': String(Math.ceil(oauth.jwksRefreshMs / 1000)) },
  );
}
