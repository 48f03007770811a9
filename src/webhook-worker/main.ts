import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { appConnectionLimits } from '../common/bootstrap/app-connection-limits.js';
import { runWorker } from '../common/bootstrap/run-http-app.js';
import { PinoNestLogger } from '../common/logging/pino-nest-logger.js';
import type { AppConfig } from '../config/app-config.js';
import { loadConfig } from '../config/load-config.js';
import { WebhookWorkerModule } from './webhook-worker.module.js';
import { workerProbes } from './worker-probes.js';

/**
 * The webhook worker (`npm run webhook-worker`): delivers the outbox, binding /health and
 * /metrics only. It needs PostgreSQL: the embedded store allows one process.
 */
void runWorker<AppConfig>({
  loadConfig: () => loadConfig(process.env, { role: 'webhook-worker' }),
  createContext: (config, logger) =>
    NestFactory.createApplicationContext(WebhookWorkerModule.forRoot(config, logger), {
      logger: new PinoNestLogger(logger),
      abortOnError: false,
    }),
  listeners: (config) => ({
    host: config.http.host,
    ports: { health: config.health.port, metrics: config.metrics.port },
    portVariables: { health: 'SERVICE_HEALTH_CHECK_PORT', metrics: 'SERVICE_METRICS_PORT' },
  }),
  handlers: workerProbes,
  connectionLimits: appConnectionLimits,
  announce: (config, logger, ports) =>
    logger.info(
      { ports, store: config.database.kind, version: config.version },
      'webhook worker running',
    ),
});
