import { Inject, Injectable } from '@nestjs/common';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import { LOGGER } from '../../../common/logging/logger.token.js';
import { APP_VERSION } from '../../../config/shared/version.js';
import type { AgentConnection, RequestNotificationSink } from '../../agents/agent-connection.js';
import { AgentRegistry } from '../../agents/agent-registry.service.js';
import { RateLimitedLog } from '../../../common/logging/rate-limited-log.js';
import {
  cancelledError,
  isObject,
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../../json-rpc/json-rpc.js';
import { RelayForwarder } from '../sessions/relay-forwarder.service.js';
import { type RelaySession, SessionStore } from '../sessions/session-store.service.js';
import { offeredDigest } from './offered-tools.js';
import { OtherReplicas } from '../sessions/other-replicas.js';
import { notUp } from '../sessions/relay-target.js';
import { type FetchToolsPage, listAllTools, type ToolListLimits } from './tool-lists.js';
import { splitName } from './tool-names.js';
import { TOOLS_LIST_CHANGED } from '../sessions/inventory-changes.js';

// Far above real lists (a `hello` carries all the agent's tools in one 4 MiB frame); they stop
// a hostile agent making the relay hold gigabytes.
const TOOL_LIST_LIMITS: ToolListLimits = {
  maxPagesPerServer: 10,
  concurrency: 8,
  maxBytes: 16 * 1024 * 1024,
};

/** `/mcp/<agent>`: all its tools as `<server>__<tool>`; see docs/relay-server.md, 'Endpoints'. */
@Injectable()
export class AggregateService {
  /** Per agent: a digest of the tools its connections offer, to notice changes. */
  private readonly offered = new Map<string, string>();
  /** A line per 10 s at most: what agents offer is theirs to vary. */
  private readonly failureLog: RateLimitedLog;

  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: AgentRegistry,
    private readonly sessions: SessionStore,
    private readonly forwarder: RelayForwarder,
    private readonly peers: OtherReplicas,
  ) {
    this.failureLog = new RateLimitedLog(logger, { ratePerSecond: 0.1, burst: 1 });
    registry.on('inventory', (connection) => this.refresh(connection.agent));
    registry.on('disconnect', (connection) => this.refresh(connection.agent));
    registry.on('notification', (connection, server, message) => {
      if (message.method === 'notifications/tools/list_changed' && connection.serves(server)) {
        sessions.broadcastAggregate(connection.agent, TOOLS_LIST_CHANGED);
      }
    });
  }

  /** `initialize`: the client's protocol version when the relay knows it, else its newest. */
  initialize(id: JsonRpcId, params: unknown): JsonRpcResponse {
    const asked = isObject(params) ? params.protocolVersion : undefined;
    const protocolVersion =
      typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked)
        ? asked
        : SUPPORTED_PROTOCOL_VERSIONS[0];
    return {
      jsonrpc: '2.0',
      id,
      result: {
        protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'plant-store-relay', version: APP_VERSION },
        instructions:
          'The tools of all MCP servers of this agent, each named <server>__<tool>. ' +
          'The list follows the servers that are up; it changes as they come and go.',
      },
    };
  }

  async request(
    session: RelaySession,
    message: Message,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<JsonRpcResponse> {
    const id = message.id as JsonRpcId;
    switch (message.method) {
      case 'ping':
        return { jsonrpc: '2.0', id, result: {} };
      case 'tools/list':
        return this.listTools(session, id, message.params, signal);
      case 'tools/call':
        return this.callTool(session, id, message, signal, sink);
      default:
        return jsonRpcError(
          id,
          JsonRpcCode.MethodNotFound,
          `method "${String(message.method).slice(0, 64)}" is not offered by the aggregate endpoint, which has tools only: use /mcp/${session.agent}/<server> for resources, prompts and the rest`,
        );
    }
  }

  private async listTools(
    session: RelaySession,
    id: JsonRpcId,
    params: unknown,
    signal: AbortSignal,
  ): Promise<JsonRpcResponse> {
    const { agent } = session;
    if (isObject(params) && params.cursor !== undefined) {
      const onePage = 'the aggregate endpoint answers tools/list in one page: it has no cursors';
      return jsonRpcError(id, JsonRpcCode.InvalidParams, onePage);
    }
    const elsewhere = await this.peers.serversElsewhere(agent);
    const merged = await listAllTools(
      [...this.registry.serversUp(agent), ...elsewhere.keys()],
      this.pageFetcher(session, id, elsewhere, signal),
      TOOL_LIST_LIMITS,
    );
    if (signal.aborted) return cancelledError(id);
    if (merged.failures.length > 0) {
      const failures = merged.failures
        .slice(0, 10)
        .map((f) => ({ server: f.server.slice(0, 64), reason: f.reason.slice(0, 200) }));
      this.failureLog.warn({ agent, failures }, 'aggregate tools/list left servers out');
    }
    return { jsonrpc: '2.0', id, result: { tools: merged.tools } };
  }

  // Here, all of a server's pages come from one pod (a cursor is that pod's); through the replica
  // `elsewhere` names, each page may come from another pod.
  private pageFetcher(
    { agent, client }: RelaySession,
    id: JsonRpcId,
    elsewhere: Map<string, string>,
    signal: AbortSignal,
  ): FetchToolsPage {
    const pods = new Map<string, AgentConnection | undefined>();
    return (server, cursor) => {
      const page = {
        jsonrpc: '2.0',
        id,
        method: 'tools/list',
        ...(cursor !== undefined && { params: { cursor } }),
      };
      const peer = elsewhere.get(server);
      if (peer !== undefined) {
        return this.peers.send({ peer, client, agent, server, message: page, signal });
      }
      if (!pods.has(server)) pods.set(server, this.registry.pick(agent, server));
      const connection = pods.get(server);
      if (!connection) return Promise.resolve(notUp(id, agent, server));
      return this.forwarder.send(client, connection, server, page, signal);
    };
  }

  private async callTool(
    { agent, client }: RelaySession,
    id: JsonRpcId,
    message: Message,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<JsonRpcResponse> {
    const params = isObject(message.params) ? message.params : {};
    const name = typeof params.name === 'string' ? params.name : '';
    const target = splitName(name);
    if (!target) {
      // MCP answers an unknown tool with -32602 (Invalid params).
      const unknown = `unknown tool "${name.slice(0, 200)}": aggregate tool names are <server>__<tool>`;
      return jsonRpcError(id, JsonRpcCode.InvalidParams, unknown);
    }
    const call = { ...message, params: { ...params, name: target.tool } };
    const connection = this.registry.pick(agent, target.server);
    if (connection)
      return this.forwarder.send(client, connection, target.server, call, signal, { sink });
    const peer = (await this.peers.serversElsewhere(agent)).get(target.server);
    if (peer === undefined) return notUp(id, agent, target.server);
    return this.peers.send({ peer, client, agent, server: target.server, message: call, signal });
  }

  private refresh(agent: string): void {
    const digest = offeredDigest(this.registry.of(agent));
    if ((this.offered.get(agent) ?? NOTHING_OFFERED) === digest) return;
    this.offered.set(agent, digest);
    this.sessions.broadcastAggregate(agent, TOOLS_LIST_CHANGED);
  }
}

const NOTHING_OFFERED = offeredDigest([]);
