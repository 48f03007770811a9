import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { McpModule } from '../mcp/mcp.module.js';
import { RelayModule } from '../relay/relay.module.js';
import { AgentConnectionHealthIndicator } from './agent-connection.health.js';
import { ConfigHealthIndicator } from './config.health.js';
import { McpHealthIndicator } from './mcp.health.js';
import { DatabaseHealthIndicator } from './database.health.js';
import { DatabaseWatchService } from './database-watch.service.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' }), McpModule, RelayModule],
  controllers: [HealthController],
  providers: [
    DatabaseHealthIndicator,
    ConfigHealthIndicator,
    McpHealthIndicator,
    AgentConnectionHealthIndicator,
    DatabaseWatchService,
  ],
})
export class HealthModule {}
