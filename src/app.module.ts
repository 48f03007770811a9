import {
  type DynamicModule,
  Inject,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  RequestMethod,
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
import { RequestLogMiddleware } from './common/logging/request-log.middleware.js';
import { ApiValidationPipe } from './common/validation/validation.pipe.js';
import { APP_CONFIG, type AppConfig } from './config/app-config.js';
import { DatabaseModule } from './database/database.module.js';
import { CreatePlantMiddleware } from './plants/create-plant.middleware.js';
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
        // Request bodies are read by JsonBodyGuard, after the bearer guard (AuthModule).
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    // RequestLogMiddleware writes the log line and records the HTTP metrics (MetricsModule).
    // The rate limiter only when a limit is set: off (0, the default) it would be one more
    // middleware layer per request that lets everything through.
    const middleware =
      this.config.rateLimitPerMinute > 0
        ? [RequestLogMiddleware, ClientRateLimitMiddleware]
        : [RequestLogMiddleware];
    consumer
      .apply(...middleware)
      .exclude('health', 'health/*path', 'metrics')
      .forRoutes('*path');
    // After them, so POST /plants is logged, counted and rate limited as every route.
    consumer.apply(CreatePlantMiddleware).forRoutes({ path: 'plants', method: RequestMethod.POST });
  }
}
