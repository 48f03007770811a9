import { hostname } from 'node:os';
import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { APP_CONFIG, type AppConfig } from '../../config/app-config.js';
import { LOGGER } from '../../common/logging/logger.token.js';
import { McpSupervisorService } from '../mcp/mcp-supervisor.service.js';
import {
  AgentRelayClient,
  DEFAULT_RELAY_LIMITS,
  DEFAULT_RELAY_TIMINGS,
} from './agent-relay-client.js';
import { relayUrl } from '../../agent-protocol/relay-protocol.js';

/** The relay connection; closed before the MCP servers stop, so the agent is seen leaving. */
@Injectable()
export class AgentRelayService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly #client: AgentRelayClient | undefined;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(LOGGER) logger: Logger,
    mcp: McpSupervisorService,
    @InjectMetric('agent_server_connected') connected: Gauge<string>,
    @InjectMetric('agent_mcp_stdin_dropped_total') stdinDropped: Counter<string>,
    @InjectMetric('agent_server_send_dropped_total') sendDropped: Counter<string>,
    @InjectMetric('agent_mcp_client_requests_total') clientRequests: Counter<string>,
  ) {
    if (!config.agent) return;
    const budgets = config.agentBudgets;
    this.#client = new AgentRelayClient({
      url: relayUrl(config.agent.serverUrl),
      token: config.agent.token,
      // The pod name in Kubernetes: tells the replicas of one deployment apart.
      agentId: hostname(),
      version: config.version,
      sessions: mcp,
      logger,
      connectedGauge: connected,
      timings: { ...DEFAULT_RELAY_TIMINGS, clientAnswerTimeoutMs: budgets.clientAnswerTimeoutMs },
      limits: {
        ...DEFAULT_RELAY_LIMITS,
        maxStdinBytes: budgets.mcpStdinMaxBytes,
        maxQueuedBytes: budgets.serverSendMaxBytes,
      },
      dropped: (place, server, kind) =>
        (place === 'mcp-stdin' ? stdinDropped : sendDropped).inc({ server, kind }),
      clientRequest: (server, outcome) => clientRequests.inc({ server, outcome }),
    });
  }

  onApplicationBootstrap(): void {
    this.#client?.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.#client?.stop();
  }

  /** For `/health` details. */
  status() {
    return this.#client?.status() ?? { enabled: false, connected: false };
  }
}
