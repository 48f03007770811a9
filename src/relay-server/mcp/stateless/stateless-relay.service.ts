import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
} from '@modelcontextprotocol/client';
import type { AgentConnection, RequestNotificationSink } from '../../agents/agent-connection.js';
import { AgentRegistry } from '../../agents/agent-registry.service.js';
import { AggregateService } from '../aggregate/aggregate.service.js';
import { splitName } from '../aggregate/tool-names.js';
import {
  idOf,
  isObject,
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../../json-rpc/json-rpc.js';
import {
  answerOf,
  invalidRequest,
  type RelayAnswer,
  type RelayTarget,
} from '../sessions/relay-target.js';
import { RelayForwarder } from '../sessions/relay-forwarder.service.js';
import { McpRelayService } from '../stateful/mcp-relay.service.js';
import { OtherReplicas } from '../sessions/other-replicas.js';
import type { RelaySession } from '../sessions/session-store.service.js';
import { type ListKind, ListenStore, listsAsked } from './listen-store.service.js';
import {
  discoverAnswer,
  metaOf,
  MODERN_VERSION,
  refusal,
  statusOf,
  toStatelessAnswer,
  withoutEnvelope,
} from './stateless-wire.js';
import type { StandardHeaders } from './standard-headers.js';
import {
  badInputResponses,
  type HeldCall,
  HeldCalls,
  INPUT_METHODS,
  requestKey,
  withoutInputs,
} from './input-required.js';

/** MCP 2026-07-28 clients, each request routed on its own; see docs/design/mcp-2026-07-28.md. */
@Injectable()
export class StatelessRelay {
  private readonly held: HeldCalls;

  constructor(
    private readonly registry: AgentRegistry,
    private readonly forwarder: RelayForwarder,
    private readonly aggregate: AggregateService,
    private readonly relay: McpRelayService,
    private readonly listens: ListenStore,
    peers: OtherReplicas,
  ) {
    // Each state names this replica, so a retry entering another one is passed here.
    this.held = new HeldCalls(() => peers.replicaTag());
  }

  async post(
    target: RelayTarget,
    message: unknown,
    headers: StandardHeaders,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<RelayAnswer> {
    if (!isObject(message) || message.jsonrpc !== '2.0' || typeof message.method !== 'string') {
      return invalidRequest(idOf(message), 'not a JSON-RPC 2.0 request');
    }
    const id = idOf(message);
    // Notifications: 2026 has none a client sends that the relay must pass on (cancellation
    // is closing the POST), and responses have nowhere to go, as on the 2025 path.
    if (id === null) return { status: 202 };
    const refused = refusal(message, headers);
    if (refused) return { status: statusOf(refused) === 404 ? 404 : 400, body: refused };
    const method = message.method;
    if (method === 'subscriptions/listen') return this.listen(target, id, message, signal, sink);

    const [to, request, connection] = this.throughAggregate(target, message);
    if (to.server !== undefined && !connection) {
      return { status: 200, body: this.forwarder.unavailable(to.agent, id, to.server) };
    }
    const session = oneRequestSession(to, request, connection);
    const answer =
      method === 'server/discover'
        ? await this.discover(session, id, request, signal)
        : await this.call(session, request, signal, sink);
    return answerOf(answer, statusOf(answer));
  }

  // An aggregate `tools/call` of a server up here goes as that server's call (its tool's own name),
  // so that MRTR works there too; anything else goes as it came.
  private throughAggregate(target: RelayTarget, message: Message) {
    const params = isObject(message.params) ? message.params : {};
    const aggregateCall = target.server === undefined && message.method === 'tools/call';
    const named =
      aggregateCall && typeof params.name === 'string' ? splitName(params.name) : undefined;
    const server = named?.server ?? target.server;
    const connection = server === undefined ? undefined : this.registry.pick(target.agent, server);
    if (!named || !connection) return [target, message, connection] as const;
    const call = { ...message, params: { ...params, name: named.tool } };
    return [{ ...target, server: named.server }, call, connection] as const;
  }

  /** A request; one that may take input (MRTR) is held while its server waits for its client. */
  private async call(
    session: RelaySession,
    message: Message,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<JsonRpcResponse> {
    const { pinned } = session;
    const id = message.id as JsonRpcId;
    if (!pinned || !INPUT_METHODS.has(String(message.method))) {
      const answer = await this.relay.request(session, withoutEnvelope(message), signal, sink);
      return toStatelessAnswer(message, answer);
    }
    const refused = badInputResponses(message);
    if (refused) return refused;
    const params = message.params as Message;
    if (params.requestState !== undefined) return this.resume(session, message, signal);
    const cancel = new AbortController();
    const request = withoutInputs(withoutEnvelope(message));
    const call: HeldCall = {
      client: session.client,
      request: requestKey(message),
      // Its server's requests come later, once `call` is defined.
      answer: this.relay
        .request(session, request, cancel.signal, (asked) => HeldCalls.catch(call, asked, sink))
        .then((answer) => toStatelessAnswer(message, answer)),
      asked: new Map(),
      pool: isObject(params.inputResponses) ? params.inputResponses : {},
      reply: (reply) => this.forwarder.notify(session, reply),
      cancel,
      keys: 0,
    };
    return this.held.next(call, id, signal);
  }

  /** A retry with `requestState`: the held call it names goes on, or -32602. */
  private async resume(
    session: RelaySession,
    message: Message,
    signal: AbortSignal,
  ): Promise<JsonRpcResponse> {
    const params = message.params as Message;
    const id = message.id as JsonRpcId;
    const call = this.held.take(params.requestState, session.client, requestKey(message));
    if (!call) {
      const reason = 'requestState is unknown, expired, altered or not for this request';
      return jsonRpcError(id, JsonRpcCode.InvalidParams, reason);
    }
    this.held.resume(call, isObject(params.inputResponses) ? params.inputResponses : {});
    return this.held.next(call, id, signal);
  }

  /** Acks the lists asked for, then holds the POST's stream open until either side ends it. */
  private async listen(
    target: RelayTarget,
    id: JsonRpcId,
    message: Message,
    signal: AbortSignal,
    sink?: RequestNotificationSink,
  ): Promise<RelayAnswer> {
    if (!sink) return invalidRequest(id, 'subscriptions/listen needs Accept: text/event-stream');
    let end = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    const lists = listsAsked(message.params);
    const remove = this.listens.add({ ...target, lists, id, send: sink, end });
    if (!remove) {
      const refusal = 'too many subscriptions/listen streams open for this client';
      return answerOf(jsonRpcError(id, JsonRpcCode.Overloaded, refusal));
    }
    const subscription = { [SUBSCRIPTION_ID_META_KEY]: id };
    sink(listenAcknowledgement(lists, subscription));
    signal.addEventListener('abort', end, { once: true });
    if (signal.aborted) end();
    try {
      await ended;
    } finally {
      signal.removeEventListener('abort', end);
      remove();
    }
    return {
      status: 200,
      body: { jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: subscription } },
    };
  }

  /** From a 2025 `initialize`, which the agent answers from its cache (docs/agent-protocol.md). */
  private async discover(
    session: RelaySession,
    id: JsonRpcId,
    message: Message,
    signal: AbortSignal,
  ): Promise<JsonRpcResponse> {
    if (!session.pinned) return discoverAnswer(id, this.aggregate.initialize(id, undefined));
    const meta = metaOf(message) ?? {};
    const initialize = {
      jsonrpc: '2.0',
      id,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: isObject(meta[CLIENT_INFO_META_KEY])
          ? meta[CLIENT_INFO_META_KEY]
          : { name: 'mcp-2026-client', version: MODERN_VERSION },
      },
    };
    return discoverAnswer(id, await this.relay.request(session, initialize, signal));
  }
}

// A throwaway "session" for one request: what the forwarder needs to admit and cancel it, and
// the capabilities its server may ask it for (this request's).
function oneRequestSession(
  { client, agent, server }: RelayTarget,
  message: Message,
  connection: AgentConnection | undefined,
): RelaySession {
  const capabilities = metaOf(message)?.[CLIENT_CAPABILITIES_META_KEY];
  return {
    id: `stateless:${randomUUID()}`,
    ...(isObject(capabilities) && { capabilities }),
    client,
    agent,
    ...(connection && server !== undefined && { pinned: { server, connection } }),
    inFlight: new Map(),
    lastUsed: Date.now(),
  };
}

/** Confirms the list changes a listen gets: those it asked for. */
function listenAcknowledgement(lists: ListKind[], subscription: Message): Message {
  const notifications = Object.fromEntries(lists.map((list) => [`${list}ListChanged`, true]));
  return {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications, _meta: subscription },
  };
}
