import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { INestApplicationContext } from '@nestjs/common';
import type { Logger } from 'pino';
import { register } from 'prom-client';
import { normalPath } from '../common/http/port-scope.js';
import { LOGGER } from '../common/logging/logger.token.js';
import { type ProbeAnswer, WorkerHealth } from './worker-health.js';

/** The health and metrics ports as plain handlers; other paths get the 404 body. Never cached. */
export function workerProbes(
  context: INestApplicationContext,
): Record<'health' | 'metrics', RequestListener> {
  const health = context.get(WorkerHealth);
  const logger = context.get<Logger>(LOGGER);
  const routes: Record<string, () => Promise<ProbeAnswer>> = {
    '/health': () => health.ready(),
    '/health/ready': () => health.ready(),
    '/health/live': () => health.live(),
  };
  return {
    health: answering(logger, (path) => routes[path]?.().then(asJson)),
    metrics: answering(logger, (path) => (path === '/metrics' ? metrics() : undefined)),
  };
}

interface Answer {
  status: number;
  type: string;
  body: string;
}

/** A handler for GET requests; a path `route` does not know (undefined) is a 404. */
function answering(
  logger: Logger,
  route: (path: string) => Promise<Answer> | undefined,
): RequestListener {
  return (request: IncomingMessage, response: ServerResponse) => {
    const raw = new URL(request.url ?? '/', 'http://worker').pathname;
    const path = normalPath(raw);
    const answer = request.method === 'GET' ? route(path) : undefined;
    (answer ?? Promise.resolve(notFound(request, raw)))
      .catch((error: unknown) => {
        logger.error({ err: error, path }, 'probe failed');
        return asJson({ status: 500, body: { error: 500, message: 'internal server error' } });
      })
      .then((result) => {
        response.writeHead(result.status, {
          'Content-Type': result.type,
          'Cache-Control': 'no-cache, no-store, must-revalidate',
        });
        response.end(result.body);
      })
      .catch(() => response.destroy());
  };
}

async function metrics(): Promise<Answer> {
  return { status: 200, type: register.contentType, body: await register.metrics() };
}

function notFound(request: IncomingMessage, path: string): Answer {
  const message = `Cannot ${request.method ?? 'GET'} ${path}`;
  return asJson({ status: 404, body: { error: 404, message } });
}

function asJson({ status, body }: { status: number; body: unknown }): Answer {
  return { status, type: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}
