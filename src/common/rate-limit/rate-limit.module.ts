import { Module } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';

/**
 * Optional per-client rate limit on the API (RATE_LIMIT_PER_MINUTE, 0 = off): past it, 429
 * with Retry-After and the Error body. Off by default because behind an ingress every client
 * may share one address. AppModule applies ClientRateLimitMiddleware to every API path;
 * health and metrics are never limited.
 */
@Module({
  providers: [{ provide: ThrottlerStorage, useClass: ThrottlerStorageService }],
  exports: [ThrottlerStorage],
})
export class RateLimitModule {}
