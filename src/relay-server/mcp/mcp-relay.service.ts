import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { RelayErrorCode } from '../../common/agent-protocol/relay-protocol.js';
import { congestionMessage, type RequestNotificationSink } from '../agents/agent-connection.js';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { InFlightLimiter } from './in-flight-limiter.js';
import { JsonRpcCode, jsonRpcError, type JsonRpcId, type JsonRpcResponse } from './json-rpc.js';
import { type RelaySession, SessionStore } from './session-store.service.js';

/** What the controller writes back: an HTTP status, maybe a session id, maybe a JSON body. */
export interface RelayAnswer {
  status: number;
  sessionId?: string;
  body?: JsonRpcResponse;
  headers?: Record<string, string>;
}

export interface RelayTarget {
  client: string;
  agent: string;
  server: string;
  sessionId: string | undefined;
}

type Message = Record<string, unknown>;

/**
 * Streamable HTTP (MCP 2025-11-25) on the relay's side, as a pure forwarder: it reads only
 * what routing needs (is this a request, a notification, a response; is it `initialize`; the
 * id) and passes every message through unchanged otherwise, so MCP features the relay does
 * not know still work. `initialize` opens a session on one agent connection that has the
 * server up; every later request of that session goes to that connection.
 */
@Injectable()
export class McpRelayService {
  private readonly perAgent: InFlightLimiter;
  private readonly perClient: InFlightLimiter;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    private readonly registry: AgentRegistry,
    private readonly sessions: SessionStore,
    @InjectMetric('relay_mcp_requests_total')
    private readonly requests: Counter<'agent' | 'outcome'>,
    @InjectMetric('relay_mcp_request_duration_seconds')
    private readonly duration: Histogram<'agent'>,
    @InjectMetric('relay_mcp_requests_in_flight') private readonly inFlight: Gauge<'agent'>,
  ) {
    this.perAgent = new InFlightLimiter(config.maxInFlightPerAgent);
    this.perClient = new InFlightLimiter(config.maxInFlightPerClient);
    registry.onDisconnect((connection) => sessions.dropConnection(connection));
    registry.onNotification((connection, server, message) =>
      sessions.broadcast(connection, server, message),
    );
  }

  /**
   * One POSTed message. `sink`, when the client accepts an event stream, receives the
   * request's progress notifications before the answer.
   */
  async post(
    target: RelayTarget,
    message: unknown,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<RelayAnswer> {
    if (Array.isArray(message)) {
      return invalid(null, 'JSON-RPC batches are not part of MCP since 2025-06-18');
    }
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      return invalid(idOf(message), 'not a JSON-RPC 2.0 message');
    }
    const id = idOf(message);
    const method = typeof message.method === 'string' ? message.method : undefined;
    const kind =
      method !== undefined
        ? id !== null
          ? 'request'
          : 'id' in message
            ? 'invalid'
            : 'notification'
        : id !== null && ('result' in message || 'error' in message)
          ? 'response'
          : 'invalid';
    if (kind === 'invalid')
      return invalid(id, 'not a JSON-RPC 2.0 request, notification or response');

    if (kind === 'request' && method === 'initialize')
      return this.initialize(target, message, signal);

    if (target.sessionId === undefined) {
      return invalid(id, 'Mcp-Session-Id header is required: start a session with initialize');
    }
    const session = this.sessions.find(
      target.sessionId,
      target.client,
      target.agent,
      target.server,
    );
    if (!session) {
      return {
        status: 404,
        body: jsonRpcError(
          id,
          RelayErrorCode.ServerUnavailable,
          'session not found: initialize a new one',
        ),
      };
    }
    if (kind === 'request') {
      return answerOf(await this.forward(session, message, signal, sink));
    }
    if (kind === 'notification') {
      const refused = this.notify(session, message);
      if (refused !== undefined) return refused;
    }
    // Responses answer requests an MCP server sent its client; the agent answers those itself
    // (docs/agent-protocol.md), so a client's response has nowhere to go.
    return { status: 202 };
  }

  /**
   * GET with a session id: the session's stream of notifications about no request. A new
   * stream replaces the session's previous one. Undefined (with the answer) when refused.
   */
  openStream(
    target: RelayTarget,
    stream: NonNullable<RelaySession['stream']>,
  ): { answer?: RelayAnswer; close?: () => void } {
    if (target.sessionId === undefined) {
      return { answer: invalid(null, 'Mcp-Session-Id header is required for the event stream') };
    }
    const session = this.sessions.find(
      target.sessionId,
      target.client,
      target.agent,
      target.server,
    );
    if (!session) return { answer: { status: 404 } };
    session.stream?.end();
    session.stream = stream;
    return {
      close: () => {
        if (session.stream === stream) delete session.stream;
      },
    };
  }

  /** DELETE with a session id: the client ends its session. */
  end(target: RelayTarget): RelayAnswer {
    if (target.sessionId === undefined) return { status: 400 };
    const session = this.sessions.find(
      target.sessionId,
      target.client,
      target.agent,
      target.server,
    );
    if (!session) return { status: 404 };
    this.sessions.delete(session.id);
    return { status: 204 };
  }

  private async initialize(
    target: RelayTarget,
    message: Message,
    signal: AbortSignal,
  ): Promise<RelayAnswer> {
    const connection = this.registry.pick(target.agent, target.server);
    if (!connection) {
      this.requests.inc({ agent: target.agent, outcome: 'unavailable' });
      return {
        status: 200,
        body: jsonRpcError(
          idOf(message),
          RelayErrorCode.ServerUnavailable,
          `MCP server "${target.server}" of agent "${target.agent}" is not available (agent not connected, or the server is not up)`,
        ),
      };
    }
    const session = this.sessions.create(target.client, target.agent, target.server, connection);
    const answer = await this.forward(session, message, signal);
    if (answer.error !== undefined) {
      this.sessions.delete(session.id);
      return answerOf(answer);
    }
    return { status: 200, sessionId: session.id, body: answer };
  }

  private async forward(
    session: RelaySession,
    message: Message,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<JsonRpcResponse> {
    const clientId = idOf(message) as JsonRpcId;
    // Cancellation finds a request by the client's id: a second request with an id still in
    // flight would make the first one uncancellable (JSON-RPC ids are unique per sender).
    if (session.inFlight.has(JSON.stringify(clientId))) {
      this.requests.inc({ agent: session.agent, outcome: 'error' });
      return jsonRpcError(
        clientId,
        JsonRpcCode.InvalidRequest,
        'a request with this id is already in flight in this session',
      );
    }
    const releaseAgent = this.perAgent.acquire(session.agent);
    if (!releaseAgent) return this.overloaded(session.agent, clientId, `agent "${session.agent}"`);
    const releaseClient = this.perClient.acquire(session.client);
    if (!releaseClient) {
      releaseAgent();
      return this.overloaded(session.agent, clientId, 'this client');
    }
    const stopTimer = this.duration.startTimer({ agent: session.agent });
    this.inFlight.inc({ agent: session.agent });
    const key = JSON.stringify(clientId);
    const { connection } = session;
    const { id: relayId, response } = connection.request(
      session.server,
      withoutId(message),
      this.config.requestTimeoutMs,
      sink,
    );
    session.inFlight.set(key, relayId);
    // A client that hangs up no longer waits: the MCP server is told to stop (cancelled).
    const onAbort = () => this.cancel(session, relayId, 'client disconnected');
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const answer = await response;
      this.requests.inc({ agent: session.agent, outcome: outcomeOf(answer) });
      return { ...answer, id: clientId };
    } finally {
      signal.removeEventListener('abort', onAbort);
      session.inFlight.delete(key);
      this.inFlight.dec({ agent: session.agent });
      stopTimer();
      releaseClient();
      releaseAgent();
    }
  }

  /**
   * Passes a client's notification on; returns the answer when it is refused. A notification
   * holds a slot of the client's and the agent's in-flight caps until it has left the process,
   * and is refused (429) like a request when the agent's connection is not reading: a client
   * cannot make the relay buffer notifications without bound for an agent that does not read.
   */
  private notify(session: RelaySession, message: Message): RelayAnswer | undefined {
    if (message.method === 'notifications/cancelled') {
      const params = isObject(message.params) ? message.params : {};
      const relayId = session.inFlight.get(JSON.stringify(params.requestId));
      if (relayId !== undefined) {
        const reason =
          typeof params.reason === 'string' ? params.reason : 'cancelled by the client';
        this.cancel(session, relayId, reason);
      }
      return undefined;
    }
    const { connection } = session;
    const waiting = connection.congested;
    if (waiting !== undefined) {
      return answerOf(
        this.overloadedBy(session.agent, null, congestionMessage(session.agent, waiting)),
      );
    }
    const releaseAgent = this.perAgent.acquire(session.agent);
    if (!releaseAgent) {
      return answerOf(this.overloaded(session.agent, null, `agent "${session.agent}"`));
    }
    const releaseClient = this.perClient.acquire(session.client);
    if (!releaseClient) {
      releaseAgent();
      return answerOf(this.overloaded(session.agent, null, 'this client'));
    }
    const refused = connection.notify(session.server, message, () => {
      releaseClient();
      releaseAgent();
    });
    // Never sent: the agent would close its connection for a frame over the limit (1009).
    if (refused === undefined) return undefined;
    return {
      status: 413,
      body: jsonRpcError(null, RelayErrorCode.MessageRejected, `message rejected: ${refused}`),
    };
  }

  private cancel(session: RelaySession, relayId: number, reason: string): void {
    session.connection.notify(session.server, {
      method: 'notifications/cancelled',
      params: { requestId: relayId, reason },
    });
    session.connection.forget(relayId);
  }

  private overloaded(agent: string, id: JsonRpcId | null, who: string): JsonRpcResponse {
    return this.overloadedBy(agent, id, `too many requests in flight for ${who}; retry later`);
  }

  private overloadedBy(agent: string, id: JsonRpcId | null, message: string): JsonRpcResponse {
    this.requests.inc({ agent, outcome: 'overloaded' });
    return jsonRpcError(id, JsonRpcCode.Overloaded, message);
  }
}

function isObject(value: unknown): value is Message {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function idOf(message: unknown): JsonRpcId | null {
  if (!isObject(message)) return null;
  const id = message.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

function withoutId(message: Message): Message {
  const copy = { ...message };
  delete copy.id;
  return copy;
}

function invalid(id: JsonRpcId | null, reason: string): RelayAnswer {
  return { status: 400, body: jsonRpcError(id, JsonRpcCode.InvalidRequest, reason) };
}

/** Over a cap is HTTP 429 (with the JSON-RPC error as body), so HTTP-aware clients back off. */
function answerOf(body: JsonRpcResponse): RelayAnswer {
  return body.error?.code === JsonRpcCode.Overloaded
    ? { status: 429, body, headers: { 'Retry-After': '1' } }
    : { status: 200, body };
}

function outcomeOf(answer: JsonRpcResponse): string {
  if (answer.error === undefined) return 'ok';
  if (answer.error.code === RelayErrorCode.RequestTimeout) return 'timeout';
  if (answer.error.code === RelayErrorCode.ServerUnavailable) return 'unavailable';
  if (answer.error.code === JsonRpcCode.Overloaded) return 'overloaded';
  return 'error';
}
