import { Inject, Injectable, type NestMiddleware, Optional } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { HttpRequestMetrics } from '../metrics/http-request-metrics.js';
import { type Tracing, tracing } from '../tracing/tracing.js';
import { JsonNumber } from './json-number.js';
import { EVERY_REQUEST_LOGGED, LOGGER } from './logger.token.js';

// One log line per API request (no headers, path or body) and, in the same `finish` listener,
// the HTTP metrics where provided (the relay server has none); with tracing, a SERVER span.
@Injectable()
export class RequestLogMiddleware implements NestMiddleware {
  // The line's fields are fixed and none is secret, so it skips pino's redaction: its wildcard
  // paths (`*.token`) run on every value of every line and cost more than the line itself.
  private readonly logger: Logger;

  constructor(
    @Inject(LOGGER) logger: Logger,
    @Optional() private readonly metrics?: HttpRequestMetrics,
    @Optional() @Inject(EVERY_REQUEST_LOGGED) private readonly everyRequest = true,
  ) {
    this.logger = logger.child({}, { redact: [] });
  }

  use(request: Request, response: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    // First, so the log line below is written in the request's span (it carries its ids).
    const otel = tracing();
    const run = otel ? traced(otel, request, response) : undefined;
    response.once('finish', () => {
      const elapsed = Number(process.hrtime.bigint() - started);
      const status = response.statusCode;
      const route = routeTemplate(request);
      const line = {
        method: request.method,
        route,
        status,
        durationMs: new JsonNumber(Math.round(elapsed / 1000) / 1000),
      };
      if (status >= 500) this.logger.error(line, 'request failed');
      else if (this.everyRequest) this.logger.info(line, 'request');
      this.metrics?.record(request.method, route, status, elapsed / 1e9);
    });
    if (run) run(next);
    else next();
  }
}

/** The matched route's template (`/plants/:id`), never the raw path: labels carry no ids. */
function routeTemplate(request: Request): string {
  const route = (request as { route?: { path?: unknown; methods?: Record<string, true> } }).route;
  // A HEAD enters every route of its path, a POST-only one too: that route did not answer it.
  const method = request.method === 'HEAD' ? 'get' : request.method.toLowerCase();
  const answered = route?.methods?.[method] ?? route?.methods?._all;
  if (typeof route?.path !== 'string' || !answered) return 'unmatched';
  return `${request.baseUrl}${route.path}`;
}

/** The request as an HTTP SERVER span, ended when the response is done or the connection gone. */
function traced(otel: Tracing, request: Request, response: Response): (next: NextFunction) => void {
  const { span, run } = otel.serverSpan(request, response, {
    'http.request.method': request.method,
    'url.scheme': request.protocol,
    'network.protocol.version': request.httpVersion,
  });
  response.once('close', () => {
    const route = routeTemplate(request);
    const status = response.statusCode;
    span.updateName(`${request.method} ${route}`);
    span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
    if (!response.writableFinished) otel.endSpan(span, 'aborted');
    else otel.endSpan(span, status >= 500 ? String(status) : undefined);
  });
  return run;
}
