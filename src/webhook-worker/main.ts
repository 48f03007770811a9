import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { appConnectionLimits } from '../common/bootstrap/app-connection-limits.js';
import { runHttpApp } from '../common/bootstrap/run-http-app.js';
import { LosslessExpressAdapter } from '../common/http/lossless-express.adapter.js';
import { portScopeHandler, type ProbePorts } from '../common/http/port-scope.js';
import { PinoNestLogger } from '../common/logging/pino-nest-logger.js';
import type { AppConfig } from '../config/app-config.js';
import { loadConfig } from '../config/load-config.js';
import { WebhookWorkerModule } from './webhook-worker.module.js';

/**
 * The webhook worker (`npm run webhook-worker`): delivers the outbox, binding /health and
 * /metrics only. It needs PostgreSQL: the embedded store allows one process.
 */
void runHttpApp<AppConfig, ProbePorts>({
  loadConfig: () => loadConfig(process.env, { role: 'webhook-worker' }),
  createApp: (config, logger) =>
    NestFactory.create<NestExpressApplication>(
      WebhookWorkerModule.forRoot(config, logger),
      new LosslessExpressAdapter(),
      { bodyParser: false, logger: new PinoNestLogger(logger), abortOnError: false },
    ),
  configure(app, _config, ports) {
    app.use(portScopeHandler(ports));
  },
  listeners: (config) => ({
    host: config.http.host,
    ports: { health: config.health.port, metrics: config.metrics.port },
    portVariables: { health: 'SERVICE_HEALTH_CHECK_PORT', metrics: 'SERVICE_METRICS_PORT' },
  }),
  connectionLimits: appConnectionLimits,
  announce: (_app, config, logger, ports) =>
    logger.info(
      { ports, store: config.database.kind, version: config.version },
      'webhook worker running',
    ),
});
