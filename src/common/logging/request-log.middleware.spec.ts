import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLogMiddleware } from './request-log.middleware.js';

/** The lines the middleware logs for requests answered with these statuses. */
function linesFor(everyRequest: boolean, statuses: number[]): string[] {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  const middleware = new RequestLogMiddleware(logger, undefined, everyRequest);
  for (const status of statuses) {
    const request = { method: 'POST', baseUrl: '', route: { path: '/plants' } } as Request;
    const response = Object.assign(new EventEmitter(), { statusCode: status }) as Response;
    middleware.use(request, response, () => {});
    response.emit('finish');
  }
  return lines;
}

describe('RequestLogMiddleware', () => {
  it('logs every request by default', () => {
    const lines = linesFor(true, [200, 404, 503]);
    expect(lines.map((line) => (JSON.parse(line) as { status: number }).status)).toEqual([
      200, 404, 503,
    ]);
  });

  it('with SERVICE_REQUEST_LOG=false logs only the requests answered 5xx', () => {
    const lines = linesFor(false, [200, 404, 500, 201]);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'request failed', status: 500 });
  });

  it('labels a request with the route that answered it, else "unmatched"', () => {
    const labels = [
      ['POST', { path: '/plants', methods: { post: true } }],
      ['HEAD', { path: '/plants', methods: { get: true } }],
      ['HEAD', { path: '/plants', methods: { post: true } }],
      ['GET', undefined],
    ].map(([method, route]) => {
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
      const request = { method, baseUrl: '', route } as Request;
      const response = Object.assign(new EventEmitter(), { statusCode: 429 }) as Response;
      new RequestLogMiddleware(logger).use(request, response, () => {});
      response.emit('finish');
      return (JSON.parse(lines[0]!) as { route: string }).route;
    });
    expect(labels).toEqual(['/plants', '/plants', 'unmatched', 'unmatched']);
  });
});
