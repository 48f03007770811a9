import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { RELAY_CONFIG, type RelayClientConfig, type RelayConfig } from '../config/relay-config.js';
import {
  idpMisconfigured,
  idpUnavailable,
  insufficientScope,
  type RefusalReason,
  unauthorized,
} from './oauth/challenges.js';
import { AccessTokenVerifier, TokenRefusedError } from './oauth/access-token-verifier.service.js';
import { IdpUnavailableError } from './oauth/issuer-keys.js';
import { IdpConfigurationError } from './oauth/issuer-metadata.js';
import { type ClientRequest, PeerAuthenticator } from './client-request.js';
import { bearerToken, ownerOf } from './token-owner.js';

/**
 * MCP clients present a token of their own (RELAY_CLIENTS) or the issuer's JWT access token
 * for this relay; never an agent token. 401 with an RFC 6750 challenge otherwise; 403 (step-up)
 * for a valid access token without the agent's scope.
 */
@Injectable()
export class ClientAuthGuard implements CanActivate {
  readonly #log: RateLimitedLog;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) logger: Logger,
    private readonly verifier: AccessTokenVerifier,
    @InjectMetric('relay_client_auth_failures_total') private readonly failures: Counter,
    @InjectMetric('relay_oauth_refusals_total') private readonly refusals: Counter<'reason'>,
    private readonly peers: PeerAuthenticator,
  ) {
    this.#log = new RateLimitedLog(logger);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ClientRequest>();
    const fromPeer = this.peers.clientOf(request);
    if (fromPeer) {
      request.relayClient = fromPeer;
      request.fromPeer = true;
      return true;
    }
    const token = bearerToken(request.headers.authorization);
    const client = ownerOf(token, this.config.clients);
    if (client) {
      request.relayClient = client;
      return true;
    }
    const agent = String(request.params.agent ?? '');
    if (token === undefined || !this.config.oauth) {
      throw this.refuse(token === undefined ? 'missing_token' : 'invalid_token', agent);
    }
    request.relayClient = await this.oauthClient(token, agent);
    return true;
  }

  /** The subject as a client of its own: `oauth:<sub>` cannot collide with a RELAY_CLIENTS name. */
  private async oauthClient(token: string, agent: string): Promise<RelayClientConfig> {
    const oauth = this.config.oauth;
    if (!oauth) throw this.refuse('invalid_token', agent);
    try {
      const principal = await this.verifier.verify(token);
      if (!principal.agents.has(agent)) {
        this.refusals.inc({ reason: 'insufficient_scope' });
        this.#log.warn(
          { reason: 'insufficient_scope', subject: principal.subject },
          'MCP client refused',
        );
        throw insufficientScope(oauth, agent);
      }
      return { name: `oauth:${principal.subject}`, tokenDigests: [], agents: principal.agents };
    } catch (error) {
      if (error instanceof TokenRefusedError) throw this.refuse(error.reason, agent);
      if (error instanceof IdpUnavailableError) {
        this.refusals.inc({ reason: 'idp_unavailable' });
        this.#log.warn({ reason: 'idp_unavailable' }, 'MCP client refused');
        throw idpUnavailable(oauth);
      }
      if (error instanceof IdpConfigurationError) {
        this.refusals.inc({ reason: 'idp_misconfigured' });
        throw idpMisconfigured();
      }
      throw error;
    }
  }

  private refuse(reason: RefusalReason, agent: string) {
    this.failures.inc();
    if (this.config.oauth) {
      this.refusals.inc({ reason });
      // A missing token is how every OAuth client starts: not worth a line.
      if (reason !== 'missing_token') this.#log.warn({ reason }, 'MCP client refused');
    }
    return unauthorized(this.config.oauth, agent, reason);
  }
}
