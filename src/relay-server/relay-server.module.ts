import {
  type DynamicModule,
  type MiddlewareConsumer,
  Module,
  type NestModule,
} from '@nestjs/common';
import { APP_FILTER, RouterModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import { AllExceptionsFilter } from '../common/errors/all-exceptions.filter.js';
import { CoreModule } from '../common/core/core.module.js';
import { RequestLogMiddleware } from '../common/logging/request-log.middleware.js';
import { AggregateService } from './mcp/aggregate/aggregate.service.js';
import { AgentGateway } from './agents/agent-gateway.service.js';
import { AgentRegistry } from './agents/agent-registry.service.js';
import { ClientAuthGuard } from './auth/client-auth.guard.js';
import { OriginGuard } from './auth/origin.guard.js';
import { AccessTokenVerifier } from './auth/oauth/access-token-verifier.service.js';
import { ProtectedResourceController } from './auth/oauth/protected-resource.controller.js';
import { RELAY_CONFIG, type RelayConfig } from './config/relay-config.js';
import { PeerDispatcher } from './cluster/peer-agents.js';
import { SignedPeerAuthenticator } from './cluster/peer-client.js';
import { PeerForwarder } from './cluster/peer-forwarder.service.js';
import { PeerPingController } from './cluster/peer-ping.controller.js';
import { RelayCluster } from './cluster/relay-cluster.service.js';
import { RelayHealthController } from './health/relay-health.controller.js';
import { McpController } from './mcp/mcp.controller.js';
import { OtherReplicas } from './mcp/sessions/other-replicas.js';
import { McpRelayService } from './mcp/stateful/mcp-relay.service.js';
import { ListenStore } from './mcp/stateless/listen-store.service.js';
import { StatelessRelay } from './mcp/stateless/stateless-relay.service.js';
import { RelayForwarder } from './mcp/sessions/relay-forwarder.service.js';
import { StreamBudget } from './mcp/streams/stream-budget.js';
import { sessionsGaugeProvider, SessionStore } from './mcp/sessions/session-store.service.js';
import { relayMetricProviders } from './metrics/relay-metrics.js';

@Module({
  controllers: [McpController, PeerPingController],
  providers: [
    McpRelayService,
    StatelessRelay,
    ListenStore,
    RelayForwarder,
    StreamBudget,
    AggregateService,
    SessionStore,
    ClientAuthGuard,
    OriginGuard,
    AccessTokenVerifier,
    sessionsGaugeProvider,
    RelayCluster,
    PeerDispatcher,
    PeerForwarder,
    { provide: OtherReplicas, useExisting: PeerForwarder },
    SignedPeerAuthenticator,
  ],
  exports: [RelayCluster],
})
class McpEndpointModule {}

// The relay server, the other end of docs/agent-protocol.md: agents dial in over WebSocket
// (AgentGateway), MCP clients reach their servers over Streamable HTTP (McpController).
@Module({})
export class RelayServerModule implements NestModule {
  static forRoot(config: RelayConfig, logger: Logger): DynamicModule {
    return {
      module: RelayServerModule,
      global: true,
      imports: [
        CoreModule.forRoot(RELAY_CONFIG, config, logger),
        // GET /metrics (served on RELAY_METRICS_PORT only): process metrics plus the relay's own.
        PrometheusModule.register({ path: '/metrics', defaultMetrics: { enabled: true } }),
        TerminusModule,
        McpEndpointModule,
        RouterModule.register([{ path: config.basePath || '/', module: McpEndpointModule }]),
      ],
      controllers: [RelayHealthController, ProtectedResourceController],
      providers: [
        AgentRegistry,
        AgentGateway,
        ...relayMetricProviders,
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
      exports: [AgentRegistry, ...relayMetricProviders],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(RequestLogMiddleware)
      .exclude('health', 'health/*path', 'metrics')
      .forRoutes('*path');
  }
}
