import { Module } from '@nestjs/common';
import { WebhookDispatcher } from './webhook-dispatcher.service.js';
import { webhookMetricProviders } from './webhook-metrics.js';
import { WebhookOutboxRepository } from './webhook-outbox.repository.js';

/** The plant webhook: the outbox the plants repository writes, and its dispatcher. */
@Module({
  providers: [WebhookOutboxRepository, WebhookDispatcher, ...webhookMetricProviders],
  exports: [WebhookOutboxRepository, WebhookDispatcher],
})
export class WebhooksModule {}
