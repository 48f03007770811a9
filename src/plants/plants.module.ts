import { Module } from '@nestjs/common';
import { PlantsController } from './plants.controller.js';
import { plantsMetricProviders } from './plants.metrics.js';
import { PlantsRepository } from './plants.repository.js';
import { PlantsService } from './plants.service.js';

@Module({
  controllers: [PlantsController],
  providers: [PlantsService, PlantsRepository, ...plantsMetricProviders],
})
export class PlantsModule {}
