import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Request } from 'express';
import type { Counter } from 'prom-client';
import { BearerChallengeException } from '../../common/errors/bearer-challenge.exception.js';
import { RELAY_CONFIG, type RelayClientConfig, type RelayConfig } from '../config/relay-config.js';
import { bearerToken, ownerOf } from './token-owner.js';

const REALM = 'Bearer realm="plant-store-relay"';

export type ClientRequest = Request & { relayClient?: RelayClientConfig };

/**
 * MCP clients authenticate with a bearer token of their own (RELAY_CLIENTS). Agent tokens are
 * never accepted here: the configuration keeps the two sets apart. 401 with an RFC 6750
 * challenge otherwise.
 */
@Injectable()
export class ClientAuthGuard implements CanActivate {
  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @InjectMetric('relay_client_auth_failures_total') private readonly failures: Counter,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<ClientRequest>();
    const token = bearerToken(request.headers.authorization);
    const client = ownerOf(token, this.config.clients);
    if (client) {
      request.relayClient = client;
      return true;
    }
    this.failures.inc();
    throw token === undefined
      ? new BearerChallengeException(
          'authentication required: send Authorization: Bearer <token>',
          REALM,
        )
      : new BearerChallengeException(
          'the bearer token is not valid',
          `${REALM}, error="invalid_token", error_description="the token is not accepted"`,
        );
  }
}
