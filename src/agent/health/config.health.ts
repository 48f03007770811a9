import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';

/** The configuration was validated at start (the process would not be running otherwise). */
@Injectable()
export class ConfigHealthIndicator {
  constructor(
    private readonly indicator: HealthIndicatorService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  check(key = 'config'): HealthIndicatorResult {
    return this.indicator.check(key).up({
      mcpServersFile: this.config.mcp.file,
      mcpServersFileFound: !this.config.mcp.absent,
      agentConnection: this.config.agent ? 'enabled' : 'disabled',
    });
  }
}
