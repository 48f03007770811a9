import 'reflect-metadata';
import type { ServerOptions } from 'node:https';
import type { NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { getToken } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { runHttpApp } from '../common/bootstrap/run-http-app.js';
import { LosslessExpressAdapter } from '../common/http/lossless-express.adapter.js';
import { portScopeHandler } from '../common/http/port-scope.js';
import { PinoNestLogger } from '../common/logging/pino-nest-logger.js';
import { SignedPeerAuthenticator } from './cluster/peer-client.js';
import { AgentGateway } from './agents/agent-gateway.service.js';
import { RelayCluster } from './cluster/relay-cluster.service.js';
import { ListenStore } from './mcp/stateless/listen-store.service.js';
import { SessionStore } from './mcp/sessions/session-store.service.js';
import { loadRelayConfig } from './config/load-relay-config.js';
import type { RelayConfig } from './config/relay-config.js';
import { RelayServerModule } from './relay-server.module.js';

// The relay server (`npm run relay-server`): a bad RELAY_* setting exits 78 naming every problem;
// agents and clients on RELAY_PORT, probes and metrics on their own ports (runHttpApp).
void runHttpApp<RelayConfig>({
  loadConfig: () => loadRelayConfig(process.env),
  createApp: (config, logger) =>
    NestFactory.create<NestExpressApplication>(
      RelayServerModule.forRoot(config, logger),
      new LosslessExpressAdapter(),
      {
        // The MCP controller reads its body itself, with the frame limit.
        bodyParser: false,
        logger: new PinoNestLogger(logger),
        abortOnError: false,
        httpsOptions: httpsOptions(config),
      },
    ),
  configure(app, _config, ports) {
    app.use(portScopeHandler(ports));
    // Ahead of every controller's guards: what the replicas send each other (cluster/).
    app.useGlobalGuards(app.get(SignedPeerAuthenticator));
  },
  listeners: (config) => ({
    host: config.http.host,
    ports: { api: config.http.port, health: config.health.port, metrics: config.metrics.port },
    portVariables: {
      api: 'RELAY_PORT',
      health: 'RELAY_HEALTH_CHECK_PORT',
      metrics: 'RELAY_METRICS_PORT',
    },
  }),
  announce(app, config, logger, ports) {
    // Other replicas reach this one on its bound port: known only now with RELAY_PORT=0.
    app
      .get(RelayCluster)
      .start(ports.api)
      .catch((error: unknown) =>
        logger.error({ error: String(error) }, 'cannot start the cluster'),
      );
    logger.info(
      {
        // The bound ports: with RELAY_PORT=0 (any free port) this line is where a caller learns them.
        ports,
        tls: config.tls !== undefined,
        basePath: config.basePath || '/',
        agents: config.agents.map((a) => a.name),
        clients: config.clients.length,
        version: config.version,
      },
      'relay server listening',
    );
  },
  connectionLimits: (app, config) => {
    const counter = app.get<Counter<'reason'>>(getToken('relay_connections_refused_total'));
    // One client's requests passed on by another replica must not use up that replica's share.
    const cluster = app.get(RelayCluster);
    const limits = { ...config.connections, exempt: (a: string) => cluster.isPeerAddress(a) };
    return { limits, refused: (reason) => counter.inc({ reason }) };
  },
  // Agents are told 1001 first, which answers every waiting client at once, and event streams
  // (which never end on their own) are ended, so the drain does not wait them out.
  beforeDrain: (app) => {
    app.get(SessionStore).endStreams();
    app.get(ListenStore).endAll();
    app.get(AgentGateway).beforeApplicationShutdown();
  },
});

/** A handshake timeout (a silent peer holds its socket 120 s else); Nest's type lacks it. */
function httpsOptions(config: RelayConfig): NestApplicationOptions['httpsOptions'] {
  if (!config.tls) return undefined;
  const options: ServerOptions = { ...config.tls, handshakeTimeout: config.tlsHandshakeTimeoutMs };
  return options as NestApplicationOptions['httpsOptions'];
}
