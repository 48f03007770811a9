import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { appConnectionLimits } from '../common/bootstrap/app-connection-limits.js';
import { runHttpApp } from '../common/bootstrap/run-http-app.js';
import { portScopeHandler } from '../common/http/port-scope.js';
import { PinoNestLogger } from '../common/logging/pino-nest-logger.js';
import type { AppConfig } from '../config/app-config.js';
import { ConfigError } from '../config/shared/config-error.js';
import { loadConfig } from '../config/load-config.js';
import { WebhookWorkerModule } from './webhook-worker.module.js';

/**
 * The webhook worker (`npm run webhook-worker`, `node dist/bundle/webhook-worker.js`): delivers
 * the plant webhook's outbox, with /health and /metrics on the probe ports. The API port is
 * not served (an ephemeral loopback port that answers 404). It needs PostgreSQL: the embedded
 * store allows one process, which then delivers itself.
 */
void runHttpApp<AppConfig>({
  loadConfig: () => {
    const config = loadConfig(process.env, { servesApi: false });
    if (config.database.kind !== 'postgres') {
      throw new ConfigError([
        'the webhook worker needs PostgreSQL (DATABASE_URL): with the embedded store one process writes and delivers',
      ]);
    }
    return config;
  },
  createApp: (config, logger) =>
    NestFactory.create<NestExpressApplication>(WebhookWorkerModule.forRoot(config, logger), {
      bodyParser: false,
      logger: new PinoNestLogger(logger),
      abortOnError: false,
    }),
  configure(app, _config, ports) {
    app.use(portScopeHandler(ports));
  },
  listeners: (config) => ({
    host: config.http.host,
    ports: { api: 0, health: config.health.port, metrics: config.metrics.port },
    portVariables: {
      api: 'PORT',
      health: 'SERVICE_HEALTH_CHECK_PORT',
      metrics: 'SERVICE_METRICS_PORT',
    },
  }),
  connectionLimits: appConnectionLimits,
  announce: (_app, config, logger, ports) =>
    logger.info(
      { ports, store: config.database.kind, version: config.version },
      'webhook worker running',
    ),
});
