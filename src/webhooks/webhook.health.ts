import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { WebhookUpkeep } from './webhook-upkeep.service.js';

/** The plant webhook's receivers and backlog, for operators; never fails the probe. */
@Injectable()
export class WebhookHealthIndicator {
  constructor(
    private readonly indicator: HealthIndicatorService,
    private readonly upkeep: WebhookUpkeep,
  ) {}

  check(key = 'plantWebhook'): HealthIndicatorResult {
    return this.indicator.check(key).up({ ...this.upkeep.status() });
  }
}
