import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { AppModule, apiMiddleware } from './app.module.js';
import { appConnectionLimits } from './common/bootstrap/app-connection-limits.js';
import { runHttpApp } from './common/bootstrap/run-http-app.js';
import { DEV_TOKEN, type DevToken } from './auth/accepted-tokens.js';
import { apiPortCors } from './common/http/cors.js';
import { LosslessExpressAdapter } from './common/http/lossless-express.adapter.js';
import { malformedPathHandler } from './common/http/malformed-path.js';
import { type PortScope, portScopeHandler } from './common/http/port-scope.js';
import { writeAfterLog } from './common/logging/logger.js';
import { PinoNestLogger } from './common/logging/pino-nest-logger.js';
import type { AppConfig } from './config/app-config.js';
import { loadConfig } from './config/load-config.js';
import { buildOpenApiDocument, serveOpenApi } from './openapi/openapi.js';
import { mountCreatePlantRoute } from './plants/create-plant.route.js';

/** The plant service (`npm start`, `node dist/bundle/main.js`): see runHttpApp for the lifecycle. */
void runHttpApp<AppConfig>({
  loadConfig: () => loadConfig(process.env),
  createApp: (config, logger) =>
    NestFactory.create<NestExpressApplication>(
      AppModule.forRoot(config, logger),
      new LosslessExpressAdapter(),
      { bodyParser: false, logger: new PinoNestLogger(logger), abortOnError: false },
    ),
  configure(app, config, ports) {
    app.use(malformedPathHandler);
    app.use(portScopeHandler(ports));
    // After the port scope; CORS headers on the API port only.
    const cors = apiPortCors(config.corsOrigins, ports);
    if (cors) app.enableCors(cors);
    mountCreatePlantRoute(app, apiMiddleware(config));
    serveOpenApi(app, buildOpenApiDocument(app));
  },
  listeners: (config) => ({
    host: config.http.host,
    ports: { api: config.http.port, health: config.health.port, metrics: config.metrics.port },
    portVariables: {
      api: 'PORT',
      health: 'SERVICE_HEALTH_CHECK_PORT',
      metrics: 'SERVICE_METRICS_PORT',
    },
  }),
  connectionLimits: appConnectionLimits,
  announce: (app, config, logger, ports) =>
    announce(config, ports, logger, app.get<DevToken>(DEV_TOKEN)),
});

function announce(config: AppConfig, ports: PortScope, logger: Logger, dev: DevToken): void {
  const host = config.http.host === '0.0.0.0' ? 'localhost' : config.http.host;
  // The bound ports: with PORT=0 (any free port) this line is where a caller learns them.
  const fields = { ports, store: config.database.kind, version: config.version };
  logger.info(fields, 'Plant Store listening');
  // For a person at a terminal, not in production; it prints the development token (the quick
  // start's key; API_TOKENS' never), after the log lines before it, so it comes last.
  if (config.production) return;
  const api = `http://${host}:${ports.api}`;
  const token = dev.token
    ? [`  Development token (kept in ${dev.file}):`, `    ${dev.token}`]
    : ['  Tokens           the ones API_TOKENS lists'];
  const banner = [
    `  Plant Store API  ${api}  (docs: ${api}/docs)`,
    `  Health           http://${host}:${ports.health}/health`,
    `  Metrics          http://${host}:${ports.metrics}/metrics`,
    ...token,
  ];
  writeAfterLog(logger, `\n${banner.join('\n')}\n\n`);
}
