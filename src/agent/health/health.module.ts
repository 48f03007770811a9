import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { McpModule } from '../mcp/mcp.module.js';
import { RelayModule } from '../relay/relay.module.js';
import { WebhookHealthIndicator } from '../../webhooks/webhook.health.js';
import { WebhooksModule } from '../../webhooks/webhooks.module.js';
import { DatabaseHealthIndicator } from '../../database/database.health.js';
import { DatabaseWatchService } from './database-watch.service.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [
    TerminusModule.forRoot({ errorLogStyle: 'json' }),
    McpModule,
    RelayModule,
    WebhooksModule,
  ],
  controllers: [HealthController],
  providers: [DatabaseHealthIndicator, DatabaseWatchService, WebhookHealthIndicator],
})
export class HealthModule {}
