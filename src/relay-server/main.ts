import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { boundPort } from '../common/http/bound-port.js';
import { applyServerLimits } from '../common/http/http-server-limits.js';
import { LosslessExpressAdapter } from '../common/http/lossless-express.adapter.js';
import { type PortScope, portScopeHandler } from '../common/http/port-scope.js';
import { createLogger } from '../common/logging/logger.js';
import { PinoNestLogger } from '../common/logging/pino-nest-logger.js';
import { startUpLogger } from '../common/logging/start-up-logger.js';
import { ConfigError, EX_CONFIG } from '../config/config-error.js';
import { loadRelayConfig } from './config/load-relay-config.js';
import type { RelayConfig } from './config/relay-config.js';
import { RelayServerModule } from './relay-server.module.js';

/** Client requests get this long to finish after SIGTERM before connections are cut. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * The relay server's entry point (`npm run relay-server`, `node dist/relay-server/main.js`):
 * validate the RELAY_* environment (exit 78 naming every problem), then serve agents and MCP
 * clients on RELAY_PORT (TLS when a certificate is given), probes and metrics on their own
 * plain-HTTP ports.
 */
async function bootstrap(): Promise<void> {
  let config: RelayConfig;
  try {
    config = loadRelayConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EX_CONFIG);
  }
  const logger = createLogger(config);

  let app: NestExpressApplication;
  try {
    app = await NestFactory.create<NestExpressApplication>(
      RelayServerModule.forRoot(config, logger),
      new LosslessExpressAdapter(),
      {
        // The MCP controller reads its body itself, with the frame limit.
        bodyParser: false,
        logger: new PinoNestLogger(logger),
        abortOnError: false,
        httpsOptions: config.tls,
      },
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
  // The configured ports until each listener is bound; then the bound ones (0 means any free).
  const ports: PortScope = {
    api: config.http.port,
    health: config.health.port,
    metrics: config.metrics.port,
  };
  app.use(portScopeHandler(() => ports));

  let extra: Server[];
  try {
    // The plant API's limits: headers within 10 s, a bounded request time, JSON error bodies.
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
    logger.fatal(
      { reason: error instanceof Error ? error.message : String(error) },
      'cannot listen',
    );
    await app.close().catch(() => undefined);
    logger.flush();
    process.exit(1);
  }
  const configured = [config.http.port, config.health.port, config.metrics.port];
  startUpLogger(logger, configured).info(
    {
      // The bound ports: with RELAY_PORT=0 (any free port) this line is where a caller learns them.
      ports: { ...ports },
      tls: config.tls !== undefined,
      basePath: config.basePath || '/',
      agents: config.agents.map((a) => a.name),
      clients: config.clients.length,
      version: config.version,
    },
    'relay server listening',
  );
  handleSignals(app, extra, logger);
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/**
 * SIGTERM/SIGINT/SIGHUP: agents are sent 1001 (AgentGateway), which answers every waiting client
 * with a JSON-RPC error; then the listeners close and the process exits 0.
 */
function handleSignals(app: NestExpressApplication, extra: Server[], logger: Logger): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('connections still open after 10 s; closing them');
      for (const server of [app.getHttpServer(), ...extra]) server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    for (const server of extra) server.close();
    app
      .close()
      .then(() => {
        clearTimeout(force);
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
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A closed terminal or a supervisor's reload: Node's default would exit at once, leaving
  // waiting clients unanswered.
  process.on('SIGHUP', stop);
}

void bootstrap();
