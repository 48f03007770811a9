import {
  type DynamicModule,
  Inject,
  type MiddlewareConsumer,
  Module,
  type NestMiddleware,
  type NestModule,
  type Type,
} from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';
import type { Logger } from 'pino';
import { AgentModule } from './agent/agent.module.js';
import { AuthModule } from './auth/auth.module.js';
import { CoreModule } from './common/core/core.module.js';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter.js';
import { MetricsModule } from './common/metrics/metrics.module.js';
import { ClientRateLimitMiddleware } from './common/rate-limit/client-rate-limit.middleware.js';
import { EVERY_REQUEST_LOGGED } from './common/logging/logger.token.js';
import { RequestLogMiddleware } from './common/logging/request-log.middleware.js';
import { ApiValidationPipe } from './common/validation/validation.pipe.js';
import { APP_CONFIG, type AppConfig } from './config/app-config.js';
import { DatabaseModule } from './database/database.module.js';
import { PlantsModule } from './plants/plants.module.js';

@Module({})
export class AppModule implements NestModule {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /**
   * `agent: false` leaves AgentModule out (MCP supervisor, relay connection, health indicators):
   * the plant store alone, as the e2e test that proves it boots without the agent builds it.
   */
  static forRoot(config: AppConfig, logger: Logger, { agent = true } = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(APP_CONFIG, config, logger),
        DatabaseModule,
        MetricsModule,
        AuthModule,
        PlantsModule,
        ...(agent ? [AgentModule] : []),
      ],
      providers: [
        ApiValidationPipe,
        { provide: APP_PIPE, useExisting: ApiValidationPipe },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // The rate limit's counts (RATE_LIMIT_PER_MINUTE, off by default: behind an ingress,
        // clients share its address).
        { provide: ThrottlerStorage, useClass: ThrottlerStorageService },
        { provide: EVERY_REQUEST_LOGGED, useValue: config.requestLog },
        RequestLogMiddleware,
        ClientRateLimitMiddleware,
        // Request bodies are read by JsonBodyGuard, after the bearer guard (AuthModule).
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(...apiMiddleware(this.config))
      .exclude('health', 'health/*path', 'metrics')
      .forRoutes('*path');
  }
}

// Every API request's middleware (providers too, for POST /plants's route in main.ts): the log
// line and HTTP metrics, and the rate limiter only when a limit is set (off: a no-op layer).
export function apiMiddleware(config: AppConfig): Type<NestMiddleware>[] {
  return config.rateLimitPerMinute > 0
    ? [RequestLogMiddleware, ClientRateLimitMiddleware]
    : [RequestLogMiddleware];
}
