import type { Counter } from 'prom-client';
import type { RateLimitedLog } from '../../../common/logging/rate-limited-log.js';
import type { RelayClientConfig, RelayOAuthConfig } from '../../config/relay-config.js';
import type { ClientAuthMethod } from '../client-request.js';
import { type AccessTokenVerifier, TokenRefusedError } from './access-token-verifier.service.js';
import {
  idpMisconfigured,
  idpUnavailable,
  insufficientScope,
  type RefusalReason,
} from './challenges.js';
import { IdpUnavailableError } from './issuer-keys.js';
import { IdpConfigurationError } from './issuer-metadata.js';

/**
 * The issuer's JWT access token for this relay: 403 (step-up) without the agent's scope, 503
 * while the IdP is unreachable. The subject is a client of its own, `oauth:<sub>`, which cannot
 * collide with a RELAY_CLIENTS name.
 */
export class OAuthClients implements ClientAuthMethod {
  constructor(
    private readonly oauth: RelayOAuthConfig,
    private readonly verifier: AccessTokenVerifier,
    private readonly refusals: Counter<'reason'>,
    private readonly log: RateLimitedLog,
  ) {}

  async clientOf(token: string | undefined, agent: string): Promise<RelayClientConfig> {
    // A missing token is how every OAuth client starts: counted, not worth a line.
    if (token === undefined) {
      throw this.refused('missing_token', new TokenRefusedError('missing_token'), false);
    }
    try {
      const { subject, agents } = await this.verifier.verify(token);
      if (!agents.has(agent)) {
        throw this.refused('insufficient_scope', insufficientScope(this.oauth, agent), { subject });
      }
      return { name: `oauth:${subject}`, tokenDigests: [], agents };
    } catch (error) {
      if (error instanceof TokenRefusedError) throw this.refused(error.reason, error);
      if (error instanceof IdpUnavailableError) {
        throw this.refused('idp_unavailable', idpUnavailable(this.oauth));
      }
      // The verifier logged it loudly already.
      if (error instanceof IdpConfigurationError) {
        throw this.refused('idp_misconfigured', idpMisconfigured(), false);
      }
      throw error;
    }
  }

  private refused<E>(reason: RefusalReason, error: E, fields: object | false = {}): E {
    this.refusals.inc({ reason });
    if (fields) this.log.warn({ reason, ...fields }, 'MCP client refused');
    return error;
  }
}
