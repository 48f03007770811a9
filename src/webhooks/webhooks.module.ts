import { Module } from '@nestjs/common';
import { WebhookDelivery } from './webhook-delivery.service.js';
import { webhookMetricProviders } from './webhook-metrics.js';
import { WebhookOutboxRepository } from './webhook-outbox.repository.js';
import { WebhookUpkeep } from './webhook-upkeep.service.js';

/** The plant webhook: the outbox the plants repository writes, its delivery and upkeep. */
@Module({
  providers: [WebhookOutboxRepository, WebhookDelivery, WebhookUpkeep, ...webhookMetricProviders],
  exports: [WebhookOutboxRepository, WebhookUpkeep],
})
export class WebhooksModule {}
