import { Inject, Injectable, type NestMiddleware, Optional } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { routeTemplate } from '../http/route-template.js';
import { HttpRequestMetrics } from '../metrics/http-request-metrics.js';
import { LOGGER } from './logger.token.js';

/**
 * One log line per API request: method, route template, status and duration. No headers, no
 * raw path (it may carry ids), no body: tokens and personal data stay out of the log.
 *
 * Where the HTTP metrics are provided (the plant API; the relay server has none), the same
 * `finish` listener records them: one listener, one Express layer and one route-exclusion
 * check per request instead of two of each.
 */
@Injectable()
export class RequestLogMiddleware implements NestMiddleware {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() private readonly metrics?: HttpRequestMetrics,
  ) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    response.once('finish', () => {
      const elapsed = Number(process.hrtime.bigint() - started);
      const status = response.statusCode;
      const route = routeTemplate(request);
      const line = {
        method: request.method,
        route,
        status,
        durationMs: Math.round(elapsed / 1000) / 1000,
      };
      if (status >= 500) this.logger.error(line, 'request failed');
      else this.logger.info(line, 'request');
      this.metrics?.record(request.method, route, status, elapsed / 1e9);
    });
    next();
  }
}
