import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { type INestApplicationContext, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService } from '@nestjs/terminus';
import type { Logger } from 'pino';
import { register } from 'prom-client';
import { normalPath } from '../common/http/port-scope.js';
import { LOGGER } from '../common/logging/logger.token.js';
import { DatabaseHealthIndicator } from '../database/database.health.js';
import { WebhookHealthIndicator } from '../webhooks/webhook.health.js';

/**
 * The health and metrics ports as plain handlers; other paths get the 404 body. Never cached.
 * Health is down (503) only when the database does not answer; the webhook is a detail.
 */
export function workerProbes(
  context: INestApplicationContext,
): Record<'health' | 'metrics', RequestListener> {
  const health = context.get(HealthCheckService);
  const database = context.get(DatabaseHealthIndicator);
  const webhook = context.get(WebhookHealthIndicator);
  const logger = context.get<Logger>(LOGGER);
  const ready = () => checked(health, [() => database.check(), () => webhook.check()]);
  const routes: Record<string, () => Promise<Answer>> = {
    '/health': ready,
    '/health/ready': ready,
    '/health/live': () => checked(health, []),
  };
  return {
    health: answering(logger, (path) => routes[path]?.()),
    metrics: answering(logger, (path) => (path === '/metrics' ? metrics() : undefined)),
  };
}

/** Terminus's own body: 200 when up, 503 (which Terminus throws) when down. */
async function checked(
  health: HealthCheckService,
  checks: Parameters<HealthCheckService['check']>[0],
): Promise<Answer> {
  try {
    return asJson({ status: 200, body: await health.check(checks) });
  } catch (error) {
    if (!(error instanceof ServiceUnavailableException)) throw error;
    return asJson({ status: 503, body: error.getResponse() });
  }
}

type Answer = { status: number; type: string; body: string };

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
