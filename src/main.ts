import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { AppModule } from './app.module.js';
import { DEV_TOKEN, type DevToken } from './auth/accepted-tokens.js';
import { corsOptions } from './common/http/cors.js';
import { ConnectionDrain } from './common/http/connection-drain.js';
import { boundPort } from './common/http/bound-port.js';
import { applyServerLimits } from './common/http/http-server-limits.js';
import { LosslessExpressAdapter } from './common/http/lossless-express.adapter.js';
import { malformedPathHandler } from './common/http/malformed-path.js';
import { type PortScope, portScopeHandler } from './common/http/port-scope.js';
import { createLogger, writeAfterLog } from './common/logging/logger.js';
import { PinoNestLogger } from './common/logging/pino-nest-logger.js';
import { startUpLogger } from './common/logging/start-up-logger.js';
import type { AppConfig } from './config/app-config.js';
import { ConfigError, EX_CONFIG } from './config/config-error.js';
import { loadConfig } from './config/load-config.js';
import { buildOpenApiDocument, serveOpenApi } from './openapi/openapi.js';

/** In-flight requests get this long to finish after SIGTERM before connections are cut. */
const SHUTDOWN_GRACE_MS = 10_000;

async function bootstrap(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EX_CONFIG);
  }
  const logger = createLogger(config);

  let app: NestExpressApplication;
  try {
    app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot(config, logger),
      new LosslessExpressAdapter(),
      { bodyParser: false, logger: new PinoNestLogger(logger), abortOnError: false },
    );
  } catch (error) {
    logger.fatal(
      { reason: error instanceof Error ? error.message : String(error) },
      'cannot start',
    );
    logger.flush();
    process.exitCode = 1;
    return;
  }

  app.use(malformedPathHandler);
  // The configured ports until each listener is bound; then the bound ones (0 means any free).
  const ports: PortScope = {
    api: config.http.port,
    health: config.health.port,
    metrics: config.metrics.port,
  };
  app.use(portScopeHandler(() => ports));
  // After the port scope: only the API port answers CORS preflights.
  const cors = corsOptions(config.corsOrigins);
  if (cors) app.enableCors(cors);
  serveOpenApi(app, buildOpenApiDocument(app));

  let extra: Server[];
  try {
    applyServerLimits(app.getHttpServer());
    await app.listen(config.http.port, config.http.host);
    ports.api = boundPort(app.getHttpServer());
    extra = await Promise.all(
      (['health', 'metrics'] as const).map(async (listener) => {
        const server = createServer(app.getHttpAdapter().getInstance());
        applyServerLimits(server);
        await listen(server, ports[listener], config.http.host);
        ports[listener] = boundPort(server);
        return server;
      }),
    );
  } catch (error) {
    // A port in use or an address that is not this host's: stop what started (MCP servers,
    // the database) and exit 1 with one clear line.
    logger.fatal(
      { reason: error instanceof Error ? error.message : String(error) },
      'cannot listen',
    );
    await app.close().catch(() => undefined);
    logger.flush();
    process.exit(1);
  }
  announce(config, ports, logger, app.get<DevToken>(DEV_TOKEN));
  handleSignals(app, extra, logger);
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

function announce(config: AppConfig, ports: PortScope, logger: Logger, dev: DevToken): void {
  const host = config.http.host === '0.0.0.0' ? 'localhost' : config.http.host;
  const configured = [config.http.port, config.health.port, config.metrics.port];
  startUpLogger(logger, configured).info(
    {
      // The bound ports: with PORT=0 (any free port) this line is where a caller learns them.
      ports: { ...ports },
      store: config.database.kind,
      version: config.version,
    },
    'Plant Store listening',
  );
  // The development token is printed once, to stdout, on purpose: it is the quick start's key.
  // Real tokens (API_TOKENS) are never printed. Written after the log lines before it, so it
  // comes last instead of among them.
  if (dev.token) {
    writeAfterLog(
      logger,
      [
        '',
        `  Plant Store API  http://${host}:${ports.api}  (docs: http://${host}:${ports.api}/docs)`,
        `  Health           http://${host}:${ports.health}/health`,
        `  Metrics          http://${host}:${ports.metrics}/metrics`,
        `  Development token (kept in ${dev.file}):`,
        `    ${dev.token}`,
        '',
        '',
      ].join('\n'),
    );
  }
}

/**
 * SIGTERM, SIGINT and SIGHUP: stop accepting on every port and answer `Connection: close`
 * from then on, let in-flight requests finish (10 s at most), then run Nest's shutdown hooks
 * (MCP servers stopped, database closed) and exit 0. SIGHUP is not a reload: a closed
 * terminal or a supervisor's hang-up stops the service cleanly instead of killing it at once.
 */
function handleSignals(app: NestExpressApplication, extra: Server[], logger: Logger): void {
  const drain = new ConnectionDrain([app.getHttpServer(), ...extra]);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    drain
      .drain(SHUTDOWN_GRACE_MS)
      .then((outcome) => {
        if (outcome === 'cut') {
          logger.warn('requests still in flight after 10 s; closed their connections');
        }
        return app.close();
      })
      .then(() => {
        logger.info('stopped');
        logger.flush();
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        logger.flush();
        process.exit(1);
      });
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
}

void bootstrap();
