import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { BearerChallengeException } from '../common/errors/bearer-challenge.exception.js';
import { IS_PUBLIC } from '../common/auth/public.decorator.js';
import type { ApiClient } from './bearer.strategy.js';

const REALM = 'Bearer realm="plant-store"';

/**
 * Deny by default: every route needs `Authorization: Bearer <token>` unless marked @Public().
 * A failure answers 401 with an RFC 6750 challenge (`error="invalid_token"` when a token was
 * sent but is not accepted) and counts in auth_failures_total.
 */
@Injectable()
export class BearerGuard extends AuthGuard('bearer') {
  constructor(
    private readonly reflector: Reflector,
    @InjectMetric('auth_failures_total') private readonly failures: Counter,
  ) {
    super();
  }

  override canActivate(context: ExecutionContext) {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    return isPublic ? true : super.canActivate(context);
  }

  override handleRequest<T = ApiClient>(error: unknown, client: T | false, info: unknown): T {
    if (error)
      throw error instanceof Error ? error : new Error('authentication failed', { cause: error });
    if (client) return client;
    this.failures.inc();
    const tokenSent = typeof info === 'string' && info.includes('invalid_token');
    if (tokenSent) {
      throw new BearerChallengeException(
        'the bearer token is not valid',
        `${REALM}, error="invalid_token", error_description="the token is not accepted"`,
      );
    }
    throw new BearerChallengeException(
      'authentication required: send Authorization: Bearer <token>',
      REALM,
    );
  }
}
