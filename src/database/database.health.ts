import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { DatabasePingService } from './database-ping.service.js';

/** The probe's budget is 1 s; the ping gets most of it, so /health always answers in time. */
export const DATABASE_PING_TIMEOUT_MS = 750;

@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    private readonly indicator: HealthIndicatorService,
    private readonly ping: DatabasePingService,
  ) {}

  async check(key = 'database'): Promise<HealthIndicatorResult> {
    const session = this.indicator.check(key);
    const result = await this.ping.ping(DATABASE_PING_TIMEOUT_MS);
    return result.up ? session.up() : session.down({ message: result.error ?? 'down' });
  }
}
