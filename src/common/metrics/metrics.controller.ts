import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import type { Response } from 'express';
import { Public } from '../auth/public.decorator.js';

/** GET /metrics, served only on SERVICE_METRICS_PORT; Prometheus scrapes it without a token. */
@ApiExcludeController()
@SkipThrottle()
@Controller()
export class MetricsController extends PrometheusController {
  @Public()
  @Get()
  override index(@Res({ passthrough: true }) response: Response): Promise<string> {
    return super.index(response);
  }
}
