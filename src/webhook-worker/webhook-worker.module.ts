import { type DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { Logger } from 'pino';
import { CoreModule } from '../common/core/core.module.js';
import { MetricsModule } from '../common/metrics/metrics.module.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { DatabaseModule } from '../database/database.module.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { WorkerHealthController } from './worker-health.controller.js';

/**
 * The webhook worker: the plant webhook's delivery alone, with no plant API, from the same
 * build as the service (`npm run webhook-worker`). It delivers whatever WEBHOOK_DELIVERY says:
 * that setting tells the API processes to deliver nothing themselves.
 */
@Module({})
export class WebhookWorkerModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    const delivering = {
      ...config,
      webhooks: { ...config.webhooks, delivery: 'worker' as const },
    };
    return {
      module: WebhookWorkerModule,
      imports: [
        CoreModule.forRoot(APP_CONFIG, delivering, logger),
        DatabaseModule,
        MetricsModule,
        WebhooksModule,
        TerminusModule.forRoot({ errorLogStyle: 'json' }),
      ],
      controllers: [WorkerHealthController],
      providers: [WebhookHealthIndicator],
    };
  }
}
