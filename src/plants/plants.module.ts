import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { PlantsController } from './plants.controller.js';
import { plantsMetricProviders } from './plants.metrics.js';
import { PlantsRepository } from './plants.repository.js';
import { PlantsService } from './plants.service.js';

@Module({
  imports: [WebhooksModule],
  controllers: [PlantsController],
  providers: [PlantsService, PlantsRepository, ...plantsMetricProviders],
})
export class PlantsModule {}
