import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ConfigHealthIndicator } from './config.health.js';
import { DatabaseHealthIndicator } from './database.health.js';
import { DatabaseWatchService } from './database-watch.service.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' })],
  controllers: [HealthController],
  providers: [DatabaseHealthIndicator, ConfigHealthIndicator, DatabaseWatchService],
})
export class HealthModule {}
