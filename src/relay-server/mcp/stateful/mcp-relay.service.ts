import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { RelayErrorCode } from '../../../agent-protocol/relay-protocol.js';
import type { AgentConnection, RequestNotificationSink } from '../../agents/agent-connection.js';
import { AgentRegistry } from '../../agents/agent-registry.service.js';
import { AggregateService } from '../aggregate/aggregate.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../../config/relay-config.js';
import {
  idOf,
  isObject,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../../json-rpc/json-rpc.js';
import { changedServers, LIST_CHANGED, TOOLS_LIST_CHANGED } from '../sessions/inventory-changes.js';
import { RelayForwarder } from '../sessions/relay-forwarder.service.js';
import {
  answerOf,
  invalidRequest,
  type RelayAnswer,
  type RelayTarget,
} from '../sessions/relay-target.js';
import { SessionRate } from './session-rate.js';
import { type RelaySession, SessionStore } from '../sessions/session-store.service.js';

/** Streamable HTTP (2025-11-25); reads only what routing needs, so unknown features still work. */
@Injectable()
export class McpRelayService {
  private readonly newSessions: SessionRate;

  constructor(
    @Inject(RELAY_CONFIG) config: RelayConfig,
    private readonly registry: AgentRegistry,
    private readonly sessions: SessionStore,
    private readonly forwarder: RelayForwarder,
    private readonly aggregate: AggregateService,
    @InjectMetric('relay_server_notifications_dropped_total')
    private readonly dropped: Counter<'agent' | 'reason'>,
  ) {
    this.newSessions = new SessionRate(config.maxNewSessionsPerClientPerMinute);
    registry.on('disconnect', (connection) => sessions.dropConnection(connection));
    // A server whose tools changed on a connection (it restarted, or left): its sessions there
    // re-list, as the MCP server itself may never say so.
    registry.on('inventory', (connection, before) => {
      for (const server of changedServers(before, connection.servers)) {
        sessions.broadcast(connection, server, TOOLS_LIST_CHANGED);
      }
    });
    registry.on('notification', (...event) => this.route(...event));
  }

  /** One POSTed message; `sink` (the client accepts an event stream) gets its progress. */
  async post(
    target: RelayTarget,
    message: unknown,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<RelayAnswer> {
    if (Array.isArray(message)) {
      return invalidRequest(null, 'JSON-RPC batches are not part of MCP since 2025-06-18');
    }
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      return invalidRequest(idOf(message), 'not a JSON-RPC 2.0 message');
    }
    const id = idOf(message);
    const method = typeof message.method === 'string' ? message.method : undefined;
    const kind = kindOf(message, id, method);
    if (kind === 'invalid') {
      return invalidRequest(id, 'not a JSON-RPC 2.0 request, notification or response');
    }
    if (kind === 'request' && method === 'initialize') return this.open(target, message, signal);
    if (target.sessionId === undefined) {
      const missing = 'Mcp-Session-Id header is required: start a session with initialize';
      return invalidRequest(id, missing);
    }
    const session = this.sessions.find(target);
    if (!session) {
      const gone = 'session not found: initialize a new one';
      return { status: 404, body: jsonRpcError(id, RelayErrorCode.ServerUnavailable, gone) };
    }
    if (kind === 'request') return answerOf(await this.request(session, message, signal, sink));
    // A response answers a request its MCP server sent the client: the agent checks it was
    // asked of this session (the frame says which) before the server sees it.
    return this.forwarder.notify(session, message) ?? { status: 202 };
  }

  /** GET: the session's stream of notifications about no request; it replaces the previous. */
  openStream(
    target: RelayTarget,
    stream: NonNullable<RelaySession['stream']>,
  ): { answer?: RelayAnswer; close?: () => void } {
    if (target.sessionId === undefined) {
      const missing = 'Mcp-Session-Id header is required for the event stream';
      return { answer: invalidRequest(null, missing) };
    }
    const session = this.sessions.find(target);
    if (!session) return { answer: { status: 404 } };
    session.stream?.end();
    session.stream = stream;
    const close = () => {
      if (session.stream === stream) delete session.stream;
    };
    return { close };
  }

  end(target: RelayTarget): RelayAnswer {
    if (target.sessionId === undefined) return { status: 400 };
    const session = this.sessions.find(target);
    if (!session) return { status: 404 };
    this.sessions.delete(session.id);
    return { status: 204 };
  }

  // List changes go to all the server's sessions there; the rest may carry one client's data, so
  // only to its client (`from`, or the server's only one; dropped while it served several).
  private route(
    connection: AgentConnection,
    server: string,
    message: Message,
    from?: string,
  ): void {
    const method = String(message.method);
    if (LIST_CHANGED.test(method)) {
      this.sessions.broadcast(connection, server, message);
      return;
    }
    const agent = connection.agent;
    if (method === 'notifications/progress') {
      this.dropped.inc({ agent, reason: 'no_request' });
      return;
    }
    const client = from ?? connection.soleClient(server);
    if (client === undefined) {
      this.dropped.inc({ agent, reason: 'unattributed' });
      return;
    }
    const logging = method === 'notifications/message';
    this.sessions.broadcast(connection, server, message, { client, logging });
  }

  /** `initialize`: a new session, within the client's rate of them (429 past it). */
  private async open(target: RelayTarget, message: Message, signal: AbortSignal) {
    // Each session costs a record in Redis and, once ended, a tombstone: churn is bounded.
    if (!this.newSessions.take(target.client)) {
      const refusal = 'too many new sessions for this client; retry later';
      return answerOf(this.forwarder.overloadedBy(target.agent, idOf(message), refusal));
    }
    const id = idOf(message) as JsonRpcId;
    if (target.server === undefined) {
      // The aggregate endpoint's `initialize` is the relay's to answer: no agent is asked.
      const session = this.sessions.create(target.client, target.agent);
      const body = this.aggregate.initialize(id, message.params);
      return { status: 200, sessionId: session.id, body };
    }
    const server = target.server;
    const connection = this.registry.pick(target.agent, server);
    if (!connection) {
      return { status: 200, body: this.forwarder.unavailable(target.agent, id, server) };
    }
    const session = this.sessions.create(target.client, target.agent, { server, connection });
    session.capabilities = askableCapabilities(message.params);
    const answer = await this.forwarder.run(session, message, signal, (cancelled) =>
      this.forwarder.send(target.client, connection, server, message, cancelled),
    );
    if (answer.error === undefined) return { status: 200, sessionId: session.id, body: answer };
    this.sessions.delete(session.id);
    return answerOf(answer);
  }

  /** A request of either revision's sessions: to the pinned server, or the aggregate endpoint. */
  async request(
    session: RelaySession,
    message: Message,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<JsonRpcResponse> {
    const { client, pinned } = session;
    const answer = await this.forwarder.run(session, message, signal, (cancelled) => {
      if (!pinned) return this.aggregate.request(session, message, cancelled, sink);
      const { connection, server } = pinned;
      return this.forwarder.send(client, connection, server, message, cancelled, { sink, session });
    });
    // The server's log lines may now reach this session (`route` decides).
    if (message.method === 'logging/setLevel' && answer.error === undefined) {
      session.wantsLogging = true;
    }
    return answer;
  }
}

/** What a JSON-RPC 2.0 message is, from its method, id and result or error members. */
function kindOf(
  message: Message,
  id: JsonRpcId | null,
  method: string | undefined,
): 'request' | 'notification' | 'response' | 'invalid' {
  if (method !== undefined) {
    if (id !== null) return 'request';
    return 'id' in message ? 'invalid' : 'notification';
  }
  return id !== null && ('result' in message || 'error' in message) ? 'response' : 'invalid';
}

/** What an MCP server may ask this client for: its declared sampling, elicitation, roots. */
function askableCapabilities(params: unknown): Record<string, unknown> {
  const declared = isObject(params) && isObject(params.capabilities) ? params.capabilities : {};
  const askable = ['sampling', 'elicitation', 'roots'].filter((n) => declared[n] !== undefined);
  return Object.fromEntries(askable.map((name) => [name, declared[name]]));
}
