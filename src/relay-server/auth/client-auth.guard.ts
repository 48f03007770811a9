import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { unauthorized } from './oauth/challenges.js';
import { AccessTokenVerifier, TokenRefusedError } from './oauth/access-token-verifier.service.js';
import { OAuthClients } from './oauth/oauth-clients.js';
import type { ClientAuthMethod, ClientRequest } from './client-request.js';
import { StaticTokens } from './static-tokens.js';
import { bearerToken } from './token-owner.js';

/**
 * MCP clients present a token of their own (RELAY_CLIENTS) or the issuer's JWT access token
 * for this relay; never an agent token. 401 with an RFC 6750 challenge otherwise.
 */
@Injectable()
export class ClientAuthGuard implements CanActivate {
  private readonly methods: ClientAuthMethod[];

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) logger: Logger,
    verifier: AccessTokenVerifier,
    @InjectMetric('relay_client_auth_failures_total') private readonly failures: Counter,
    @InjectMetric('relay_oauth_refusals_total') refusals: Counter<'reason'>,
  ) {
    const log = new RateLimitedLog(logger);
    const { oauth } = config;
    this.methods = [new StaticTokens(config.clients)];
    if (oauth) this.methods.push(new OAuthClients(oauth, verifier, refusals, log));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ClientRequest>();
    // Another replica's request: the cluster's guard (PeerAuthenticator) took its client.
    if (request.relayClient) return true;
    const agent = String(request.params.agent ?? '');
    const token = bearerToken(request.headers.authorization);
    try {
      for (const method of this.methods) {
        request.relayClient = await method.clientOf(token, agent);
        if (request.relayClient) return true;
      }
      throw new TokenRefusedError(token === undefined ? 'missing_token' : 'invalid_token');
    } catch (error) {
      if (!(error instanceof TokenRefusedError)) throw error;
      this.failures.inc();
      throw unauthorized(this.config.oauth, agent, error.reason);
    }
  }
}
