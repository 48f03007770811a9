import { Injectable, type NestMiddleware } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { NextFunction, Request, Response } from 'express';
import type { Counter, Histogram } from 'prom-client';
import { routeTemplate } from '../http/route-template.js';

interface Series {
  requests: { inc(): void };
  duration: { observe(seconds: number): void };
}

/**
 * http_requests_total and http_request_duration_seconds for API requests. The label sets are
 * few (route templates x methods x statuses), so each one's series is looked up once and kept:
 * prom-client otherwise hashes the labels on every observation.
 */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  private readonly series = new Map<string, Series>();

  constructor(
    @InjectMetric('http_requests_total') private readonly requests: Counter,
    @InjectMetric('http_request_duration_seconds') private readonly duration: Histogram,
  ) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    response.once('finish', () => {
      const series = this.seriesFor(request.method, routeTemplate(request), response.statusCode);
      series.requests.inc();
      series.duration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  }

  private seriesFor(method: string, route: string, status: number): Series {
    const key = `${method} ${route} ${status}`;
    let series = this.series.get(key);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { requests: this.requests.labels(labels), duration: this.duration.labels(labels) };
      this.series.set(key, series);
    }
    return series;
  }
}
