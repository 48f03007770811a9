import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import {
  DEFAULT_IPV6_SUBNET_PREFIX,
  normalizeIp,
  ThrottlerException,
  ThrottlerStorage,
} from '@nestjs/throttler';
import type { NextFunction, Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';

const WINDOW_MS = 60_000;

// Per client address (IPv6 by /64), unknown paths included: a middleware, as the throttler's
// guard counts matched routes only, each apart. Before the guards and body, so those count too.
@Injectable()
export class ClientRateLimitMiddleware implements NestMiddleware {
  private readonly message: string;

  constructor(
    @Inject(ThrottlerStorage) private readonly storage: ThrottlerStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.message = `too many requests: at most ${config.rateLimitPerMinute} a minute; retry after the Retry-After seconds`;
  }

  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    // Only applied when a limit is set (app.module.ts): 0, the default, adds no middleware.
    const limit = this.config.rateLimitPerMinute;
    const client = normalizeIp(
      request.ip ?? request.socket.remoteAddress ?? '',
      DEFAULT_IPV6_SUBNET_PREFIX,
    );
    const { isBlocked, timeToBlockExpire } = await this.storage.increment(
      `client:${client}`,
      WINDOW_MS,
      limit,
      WINDOW_MS,
      'default',
    );
    if (isBlocked) {
      response.setHeader('Retry-After', String(timeToBlockExpire));
      throw new ThrottlerException(this.message);
    }
    next();
  }
}
