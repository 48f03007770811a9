import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import type { Logger } from 'pino';
import { CoreModule } from '../common/core/core.module.js';
import { AllExceptionsFilter } from '../common/errors/all-exceptions.filter.js';
import { MetricsModule } from '../common/metrics/metrics.module.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { DatabaseHealthIndicator } from '../database/database.health.js';
import { DatabaseModule } from '../database/database.module.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { WorkerHealthController } from './worker-health.controller.js';

/** The webhook's delivery alone, with its probes: /health and /metrics, no API. */
@Module({})
export class WebhookWorkerModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: WebhookWorkerModule,
      imports: [
        CoreModule.forRoot(APP_CONFIG, config, logger),
        DatabaseModule,
        MetricsModule,
        WebhooksModule,
        TerminusModule.forRoot({ errorLogStyle: 'json' }),
      ],
      controllers: [WorkerHealthController],
      providers: [
        DatabaseHealthIndicator,
        WebhookHealthIndicator,
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
    };
  }
}
