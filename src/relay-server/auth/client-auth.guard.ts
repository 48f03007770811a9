import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { unauthorized } from './oauth/challenges.js';
import { AccessTokenVerifier, TokenRefusedError } from './oauth/access-token-verifier.service.js';
import type { ClientRequest } from './client-request.js';
import { bearerToken, ownerOf } from './token-owner.js';

/** A RELAY_CLIENTS token or the issuer's access token, never an agent's; else 401 (RFC 6750). */
@Injectable()
export class ClientAuthGuard implements CanActivate {
  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    private readonly verifier: AccessTokenVerifier,
    @InjectMetric('relay_client_auth_failures_total') private readonly failures: Counter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ClientRequest>();
    // Another replica's request: the cluster's guard (SignedPeerAuthenticator) took its client.
    if (request.relayClient) return true;
    const agent = String(request.params.agent ?? '');
    const token = bearerToken(request.headers.authorization);
    try {
      // A token of RELAY_CLIENTS is its client whatever the agent (the route checks that).
      request.relayClient =
        ownerOf(token, this.config.clients) ??
        (this.config.oauth && (await this.verifier.clientOf(token, agent)));
      if (request.relayClient) return true;
      throw new TokenRefusedError(token === undefined ? 'missing_token' : 'invalid_token');
    } catch (error) {
      if (!(error instanceof TokenRefusedError)) throw error;
      this.failures.inc();
      throw unauthorized(this.config.oauth, agent, error.reason);
    }
  }
}
