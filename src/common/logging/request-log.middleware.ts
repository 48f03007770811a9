import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { routeTemplate } from '../http/route-template.js';
import { LOGGER } from './logger.token.js';

/**
 * One log line per API request: method, route template, status and duration. No headers, no
 * raw path (it may carry ids), no body: tokens and personal data stay out of the log.
 */
@Injectable()
export class RequestLogMiddleware implements NestMiddleware {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  use(request: Request, response: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    response.once('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const status = response.statusCode;
      const line = {
        method: request.method,
        route: routeTemplate(request),
        status,
        durationMs: Math.round(durationMs * 1000) / 1000,
      };
      if (status >= 500) this.logger.error(line, 'request failed');
      else this.logger.info(line, 'request');
    });
    next();
  }
}
