import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';

/**
 * Optional per-client rate limit on the API (RATE_LIMIT_PER_MINUTE, 0 = off): one budget per
 * client address for all API routes together; past it, 429 with Retry-After and the Error
 * body. Off by default because behind an ingress every client may share one address.
 * Registered before AuthModule, so its guard runs first and floods of bad tokens are limited
 * too; bodies are read after the guards, so requests refused for their body (400, 408, 413,
 * 415) count as well. Health and metrics are never limited.
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
        // One budget per client address across every route (the default key adds the
        // controller and handler names, which gave each route its own budget).
        generateKey: (_context, tracker, throttler) => `${throttler}:${tracker}`,
        errorMessage: `too many requests: at most ${config.rateLimitPerMinute} a minute; retry after the Retry-After seconds`,
      }),
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})
export class RateLimitModule {}
