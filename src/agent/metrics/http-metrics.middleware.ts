import { Injectable, type NestMiddleware } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { NextFunction, Request, Response } from 'express';
import type { Counter, Histogram } from 'prom-client';
import { routeTemplate } from '../../common/http/route-template.js';

/** http_requests_total and http_request_duration_seconds for API requests. */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  constructor(
    @InjectMetric('http_requests_total') private readonly requests: Counter,
    @InjectMetric('http_request_duration_seconds') private readonly duration: Histogram,
  ) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    response.once('finish', () => {
      const labels = {
        method: request.method,
        route: routeTemplate(request),
        status: String(response.statusCode),
      };
      this.requests.inc(labels);
      this.duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  }
}
