import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';

/**
 * Optional per-client rate limit on the API (RATE_LIMIT_PER_MINUTE, 0 = off): past it, 429
 * with Retry-After and the Error body. Off by default because behind an ingress every client
 * may share one address. Registered before AuthModule, so its guard runs first and floods of
 * bad tokens are limited too. Health and metrics are never limited.
 */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        throttlers: [
          { name: 'default', ttl: 60_000, limit: Math.max(config.rateLimitPerMinute, 1) },
        ],
        skipIf: () => config.rateLimitPerMinute === 0,
        errorMessage: `too many requests: at most ${config.rateLimitPerMinute} a minute; retry after the Retry-After seconds`,
      }),
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})
export class RateLimitModule {}
