import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Request } from 'express';
import type { Counter } from 'prom-client';
import { BearerChallengeException } from '../common/errors/bearer-challenge.exception.js';
import { IS_PUBLIC } from '../common/auth/public.decorator.js';
import { BearerStrategy } from './bearer.strategy.js';

const REALM = 'Bearer realm="plant-store"';

/**
 * Deny by default: every route needs a bearer token unless @Public(). The token is checked by
 * passport-http-bearer's strategy, called directly (none of passport's per-request objects);
 * a failure answers 401 with an RFC 6750 challenge and counts in auth_failures_total.
 */
@Injectable()
export class BearerGuard implements CanActivate {
  /** @Public() per controller and handler, looked up once (an inherited handler may differ). */
  private readonly publicHandlers = new WeakMap<object, WeakMap<object, boolean>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly strategy: BearerStrategy,
    @InjectMetric('auth_failures_total') private readonly failures: Counter,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.isPublic(context)) return true;
    const request = context.switchToHttp().getRequest<Request>();
    const outcome = this.strategy.check(request.headers.authorization);
    if (outcome.kind === 'success') return true;
    this.failures.inc();
    if (outcome.challenge?.includes('invalid_token')) {
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

  private isPublic(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    const controller = context.getClass();
    let handlers = this.publicHandlers.get(controller);
    if (!handlers) {
      handlers = new WeakMap();
      this.publicHandlers.set(controller, handlers);
    }
    let isPublic = handlers.get(handler);
    if (isPublic === undefined) {
      isPublic =
        this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, [handler, controller]) ===
        true;
      handlers.set(handler, isPublic);
    }
    return isPublic;
  }
}
