import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { type ClientTag, RelayErrorCode } from '../../../agent-protocol/relay-protocol.js';
import { mcpSpan } from '../../../common/tracing/mcp-attributes.js';
import { tracing } from '../../../common/tracing/tracing.js';
import {
  type AgentConnection,
  congestionMessage,
  type RequestNotificationSink,
} from '../../agents/agent-connection.js';
import { RELAY_CONFIG, type RelayConfig } from '../../config/relay-config.js';
import { InFlightLimiter } from '../../../common/async/in-flight-limiter.js';
import {
  cancelledError,
  idKey,
  isObject,
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../../json-rpc/json-rpc.js';
import { answerOf, notUp, type RelayAnswer } from './relay-target.js';
import type { RelaySession } from './session-store.service.js';

/** `run` admits a session's request (within the caps, cancellably); `send` puts one on a pod. */
@Injectable()
export class RelayForwarder {
  private readonly perAgent: InFlightLimiter;
  private readonly perClient: InFlightLimiter;
  /** Per agent and client: checked against the agent's free slots, never a cap of its own. */
  private readonly perPair = new InFlightLimiter(Number.POSITIVE_INFINITY);

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @InjectMetric('relay_mcp_requests_total')
    private readonly requests: Counter<'agent' | 'outcome'>,
    @InjectMetric('relay_mcp_request_duration_seconds')
    private readonly duration: Histogram<'agent'>,
    @InjectMetric('relay_mcp_requests_in_flight') private readonly inFlight: Gauge<'agent'>,
  ) {
    this.perAgent = new InFlightLimiter(config.maxInFlightPerAgent);
    this.perClient = new InFlightLimiter(config.maxInFlightPerClient);
  }

  /** `handle` gets a signal aborted when the client cancels or hangs up; answers the client's id. */
  async run(
    session: RelaySession,
    message: Message,
    hungUp: AbortSignal,
    handle: (signal: AbortSignal) => Promise<JsonRpcResponse>,
  ): Promise<JsonRpcResponse> {
    const clientId = message.id as JsonRpcId;
    const key = idKey(clientId);
    // Cancellation finds a request by the client's id: a second request with an id still in
    // flight would make the first one uncancellable (JSON-RPC ids are unique per sender).
    if (session.inFlight.has(key)) {
      this.requests.inc({ agent: session.agent, outcome: 'error' });
      const duplicate = 'a request with this id is already in flight in this session';
      return jsonRpcError(clientId, JsonRpcCode.InvalidRequest, duplicate);
    }
    const release = this.admit(session, clientId);
    if (typeof release !== 'function') return release;
    const stopTimer = this.duration.startTimer({ agent: session.agent });
    this.inFlight.inc({ agent: session.agent });
    const cancel = new AbortController();
    session.inFlight.set(key, cancel);
    // A client that hangs up no longer waits: the MCP server is told to stop (cancelled).
    const onHangUp = () => cancel.abort('client disconnected');
    if (hungUp.aborted) onHangUp();
    else hungUp.addEventListener('abort', onHangUp, { once: true });
    try {
      const answer = await handle(cancel.signal);
      this.requests.inc({ agent: session.agent, outcome: outcomeOf(answer) });
      return { ...answer, id: clientId };
    } finally {
      hungUp.removeEventListener('abort', onHangUp);
      session.inFlight.delete(key);
      this.inFlight.dec({ agent: session.agent });
      stopTimer();
      release();
    }
  }

  // Under the connection's own id; on abort the agent gets `notifications/cancelled`. `sink` takes
  // the request's progress and the MCP server's requests for the client.
  async send(
    client: string,
    connection: AgentConnection,
    server: string,
    message: Message,
    signal: AbortSignal,
    { sink, session }: { sink?: RequestNotificationSink | undefined; session?: RelaySession } = {},
  ): Promise<JsonRpcResponse> {
    // Cancelled before it was sent (a later page of a cancelled listing): nothing to send.
    if (signal.aborted) return cancelledError(null);
    connection.served(server, client);
    const span = this.startSpan(connection.agent, server, message);
    const { id, response } = connection.request(server, withoutId(message), {
      timeoutMs: this.config.requestTimeoutMs,
      sink,
      trace: span?.carrier,
      client: session ? clientTag(session) : { name: client },
    });
    const onAbort = () => {
      const reason = typeof signal.reason === 'string' ? signal.reason : 'cancelled by the client';
      connection.notify(server, {
        method: 'notifications/cancelled',
        params: { requestId: id, reason },
      });
      connection.forget(id);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      const answer = await response;
      span?.end(answer.error === undefined ? undefined : outcomeOf(answer));
      return answer;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  // With tracing on, a CLIENT span the frame carries to the agent; its parent is the client's
  // `_meta.traceparent` (SEP-414), linked to the HTTP request's span, else that span.
  private startSpan(agent: string, server: string, message: Message) {
    const otel = tracing();
    if (!otel) return undefined;
    const { name, attributes } = mcpSpan(message);
    const fromClient = clientTraceContext(message);
    const request = otel.linkTo(otel.activeContext());
    return otel.startClientSpan(
      name,
      { ...attributes, 'plant_store.agent': agent, 'plant_store.mcp_server': server },
      fromClient,
      fromClient && request ? [request] : undefined,
    );
  }

  cancel(session: RelaySession, params: unknown): void {
    const fields = isObject(params) ? params : {};
    const reason = typeof fields.reason === 'string' ? fields.reason : 'cancelled by the client';
    session.inFlight.get(idKey(fields.requestId))?.abort(reason);
  }

  // Holds an in-flight slot until sent: -32005 (429) while the connection is not reading, so none
  // buffer unbounded; 413 past the protocol's frame limits, which the agent would close on (1009).
  notify(session: RelaySession, message: Message): RelayAnswer | undefined {
    if (message.method === 'notifications/cancelled') {
      this.cancel(session, message.params);
      return undefined;
    }
    // An aggregate session is the relay's own: its notifications concern no MCP server.
    if (!session.pinned) return undefined;
    const { connection, server } = session.pinned;
    const waiting = connection.congested;
    const release =
      waiting === undefined
        ? this.admit(session, null)
        : this.overloadedBy(session.agent, null, congestionMessage(session.agent, waiting));
    if (typeof release !== 'function') return answerOf(release);
    connection.served(server, session.client);
    const rejected = connection.notify(server, message, release, clientTag(session));
    if (rejected === undefined) return undefined;
    const why = `message rejected: ${rejected}`;
    return { status: 413, body: jsonRpcError(null, RelayErrorCode.MessageRejected, why) };
  }

  /** No connection has `server` up: a request answered before any session admitted it, counted. */
  unavailable(agent: string, id: JsonRpcId | null, server: string): JsonRpcResponse {
    this.requests.inc({ agent, outcome: 'unavailable' });
    return notUp(id, agent, server);
  }

  // A client holds no more of an agent's slots than remain free, so however many calls one client
  // hangs on the agent, the others still find a slot. Refused with -32005.
  private admit(session: RelaySession, id: JsonRpcId | null): (() => void) | JsonRpcResponse {
    const { agent, client } = session;
    const pair = JSON.stringify([agent, client]);
    const free = this.perAgent.max - this.perAgent.count(agent);
    if (free > 0 && this.perPair.count(pair) >= free) {
      return this.overloaded(agent, id, `this client's share of agent "${agent}"`);
    }
    const releases = [
      this.perAgent.acquire(agent),
      this.perClient.acquire(client),
      this.perPair.acquire(pair),
    ];
    const [releaseAgent, releaseClient] = releases;
    if (releaseAgent && releaseClient) return () => releases.forEach((release) => release?.());
    releases.forEach((release) => release?.());
    return this.overloaded(agent, id, releaseAgent ? 'this client' : `agent "${agent}"`);
  }

  private overloaded(agent: string, id: JsonRpcId | null, who: string): JsonRpcResponse {
    return this.overloadedBy(agent, id, `too many requests in flight for ${who}; retry later`);
  }

  /** A refusal for load (429, -32005), counted in relay_mcp_requests_total{outcome="overloaded"}. */
  overloadedBy(agent: string, id: JsonRpcId | null, message: string): JsonRpcResponse {
    this.requests.inc({ agent, outcome: 'overloaded' });
    return jsonRpcError(id, JsonRpcCode.Overloaded, message);
  }
}

/** The W3C trace context a client put in the request's `_meta` (SEP-414), if any. */
function clientTraceContext(
  message: Message,
): { traceparent: string; tracestate?: string } | undefined {
  const meta = isObject(message.params) ? message.params._meta : undefined;
  if (!isObject(meta) || typeof meta.traceparent !== 'string') return undefined;
  const { traceparent, tracestate } = meta;
  return typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent };
}

function withoutId(message: Message): Message {
  const copy = { ...message };
  delete copy.id;
  return copy;
}

function outcomeOf(answer: JsonRpcResponse): string {
  if (answer.error === undefined) return 'ok';
  if (answer.error.code === RelayErrorCode.RequestTimeout) return 'timeout';
  if (answer.error.code === RelayErrorCode.ServerUnavailable) return 'unavailable';
  if (answer.error.code === JsonRpcCode.Overloaded) return 'overloaded';
  return 'error';
}

/** Who the agent may ask on behalf of the MCP server while this request is in flight. */
function clientTag({ id, client, capabilities }: RelaySession): ClientTag {
  return capabilities ? { name: client, session: id, capabilities } : { name: client, session: id };
}
