import { Module } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';

/** The rate limit's storage; off by default, as clients behind an ingress share its address. */
@Module({
  providers: [{ provide: ThrottlerStorage, useClass: ThrottlerStorageService }],
  exports: [ThrottlerStorage],
})
export class RateLimitModule {}
