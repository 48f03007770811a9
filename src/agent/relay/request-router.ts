import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResponse,
} from '@modelcontextprotocol/client';
import { serverOfKey } from '../mcp/client-instances.js';
import { isRelayId, RELAY_ID_PREFIX } from '../mcp/relay-tap-transport.js';
import type { McpSession } from '../mcp/mcp-server-runner.js';
import type { McpSessions } from '../mcp/mcp-supervisor.service.js';
import { errorMessage } from '../../common/errors/error-message.js';
import { truncateForLog } from '../../common/logging/truncate-for-log.js';
import { mcpSpan } from '../../common/tracing/mcp-attributes.js';
import type { ClientSpan } from '../../common/tracing/otel.js';
import { tracing } from '../../common/tracing/tracing.js';
import {
  type ClientTag,
  RelayErrorCode,
  type RpcFrame,
  rpcError,
  type TraceContext,
} from '../../agent-protocol/relay-protocol.js';
import { type ClientRequestOutcome, ClientRequests, withMissing } from './client-requests.js';

/**
 * Routes the server's JSON-RPC traffic to the MCP sessions the agent owns, for one connection.
 * A relayed request goes to the child under an agent id (`relay:<n>`), so the agent's own
 * Client traffic on the same pipe is never confused with it; `initialize` is answered from the
 * child's cached result. Every request is answered: by the child, or with an error.
 *
 * Hostile peers: only the child a request was sent to may answer it; `maxInFlight` requests
 * wait at most, and `maxStdinBytes` per child's stdin (past it a request gets -32005 and a
 * notification is dropped, counted); an answer that cannot be sent gets -32004, or -32005
 * when the connection has no room.
 */
export type SendOutcome =
  | { sent: true }
  /** `code`: -32005 when the connection's send queue is full, -32004 when the frame is refused. */
  | { sent: false; reason: string; code: number };

/** Where a message was dropped for lack of room: a child's stdin, or the connection. */
export type DropPlace = 'mcp-stdin' | 'relay-send';
export type DropKind = 'request' | 'notification' | 'answer';

export interface RequestRouterDeps {
  sessions: Pick<McpSessions, 'session' | 'childKey' | 'openChild'>;
  /**
   * Encodes and sends one frame; says why when it could not (a closed socket is "sent").
   * `always`: sent even when the send queue is full (the agent's own small answers).
   */
  send: (frame: RpcFrame, always?: boolean) => SendOutcome;
  timeoutMs: number;
  /** How long an MCP server's request waits for its client's answer. */
  clientAnswerTimeoutMs: number;
  /** Counts what became of an MCP server's request for its client (a metric). */
  clientRequest?: (server: string, outcome: ClientRequestOutcome) => void;
  /** Relayed requests waiting for an answer, at most. */
  maxInFlight: number;
  /** Bytes waiting to be written to one child's stdin, past which relayed messages are refused. */
  maxStdinBytes: number;
  /** Counts a message dropped for lack of room (a metric). */
  dropped?: (place: DropPlace, server: string, kind: DropKind) => void;
  /** Rate-limited warnings about what a peer sent. */
  warn: (fields: Record<string, unknown>, message: string) => void;
}

interface Pending {
  server: string;
  /** The child it went to: the server's key, or its client's process's (`server/client`). */
  child: string;
  remoteId: string | number;
  /** The client session the request came from, when the server said. */
  client: ClientTag | undefined;
  missing?: Record<string, object>;
  timer: NodeJS.Timeout;
  /** With tracing on: ended with the answer, or with the reason there is none. */
  span?: Pick<ClientSpan, 'end'> | undefined;
}

/** A request from the server on its way to a child. */
type Outgoing = Pick<Pending, 'server' | 'child' | 'client'> & {
  message: JSONRPCRequest;
  trace?: TraceContext | undefined;
};

let lastAgentId = 0;
const nextAgentId = (): string => `${RELAY_ID_PREFIX}${++lastAgentId}`;

export class RequestRouter {
  readonly #pending = new Map<string, Pending>();
  readonly #clientRequests: ClientRequests;
  #closed = false;

  constructor(private readonly deps: RequestRouterDeps) {
    this.#clientRequests = new ClientRequests({
      inFlight: (child) => [...this.#pending.values()].filter((p) => p.child === child),
      send: (frame) => this.deps.send(frame),
      toChild: (child, message) => this.#toChild(child, message),
      timeoutMs: deps.clientAnswerTimeoutMs,
      // Each held request stands for one more in flight: the same cap bounds both.
      maxHeld: deps.maxInFlight,
      counted: deps.clientRequest,
      warn: deps.warn,
    });
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * A request from the server, with its frame's trace context and client; a per-client server's
   * goes to that client's own process, started first if need be.
   */
  request(server: string, message: JSONRPCRequest, trace?: TraceContext, client?: ClientTag): void {
    const session = this.deps.sessions.session(server);
    if (session && message.method === 'initialize') {
      this.#reply(server, { jsonrpc: '2.0', id: message.id, result: session.initializeResult });
      return;
    }
    const child = this.deps.sessions.childKey(server, client?.name);
    if (child === server || client?.name === undefined) {
      return this.#send({ server, child, message, trace, client });
    }
    this.deps.sessions.openChild(server, client.name).then(
      () => this.#send({ server, child, message, trace, client }),
      (error: unknown) => {
        const { ServerUnavailable } = RelayErrorCode;
        this.#reply(server, rpcError(message.id, ServerUnavailable, errorMessage(error)));
      },
    );
  }

  #send(to: Outgoing): void {
    const { server, child, message, trace, client } = to;
    const session = this.deps.sessions.session(child);
    if (this.#closed) return;
    if (!session) {
      const reason = `MCP server "${server}" is not available (unknown or not running)`;
      return this.#reply(server, rpcError(message.id, RelayErrorCode.ServerUnavailable, reason));
    }
    if (this.#pending.size >= this.deps.maxInFlight) {
      this.deps.warn(
        { server, inFlight: this.#pending.size },
        'refused a relayed request: too many in flight',
      );
      const reason = `too many relayed requests in flight (at most ${this.deps.maxInFlight})`;
      return this.#reply(server, rpcError(message.id, RelayErrorCode.TooManyRequests, reason));
    }
    if (this.#stdinFull(server, 'request', session, message)) {
      const reason = `too many bytes waiting for MCP server "${server}" to read them (at most ${this.deps.maxStdinBytes})`;
      return this.#reply(server, rpcError(message.id, RelayErrorCode.TooManyRequests, reason));
    }
    const agentId = nextAgentId();
    const timer = setTimeout(() => this.#timeout(agentId), this.deps.timeoutMs);
    const traced = startCallSpan(server, message, trace);
    const pending = { server, child, remoteId: message.id, client, timer, span: traced.span };
    this.#pending.set(agentId, pending);
    session.send({ ...traced.message, id: agentId }).catch((error: unknown) => {
      this.#fail(agentId, `could not be reached (${errorMessage(error)})`);
    });
  }

  /** A notification from the server: dropped, counted, when the child's stdin is full. */
  notification(server: string, message: JSONRPCNotification, client?: ClientTag): void {
    if (message.method === 'notifications/initialized') return;
    if (message.method === 'notifications/cancelled') return this.#cancel(server, message);
    const session = this.deps.sessions.session(this.deps.sessions.childKey(server, client?.name));
    if (!session) return;
    if (this.#stdinFull(server, 'notification', session, message)) return;
    session.send(message).catch(() => undefined);
  }

  /** The server cancels by its own id; the child only knows ours. */
  #cancel(server: string, message: JSONRPCNotification): void {
    const agentId = this.#agentIdOf(server, message.params?.requestId);
    const pending = agentId === undefined ? undefined : this.#forget(agentId);
    if (!pending) return;
    pending.span?.end('cancelled');
    // Small and one per request at most: always written, so the child can stop working.
    this.#toChild(pending.child, { ...message, params: { ...message.params, requestId: agentId } });
  }

  /** A client's answer to a request of `server`'s child, from the client session `client`. */
  response(server: string, message: JSONRPCResponse, client: ClientTag | undefined): void {
    this.#clientRequests.answer(server, message, client);
  }

  /** A relayed response, a notification, or a request for the client from the child `child`. */
  fromChild(child: string, message: JSONRPCMessage): void {
    if (this.#closed) return;
    if ('method' in message && 'id' in message) {
      this.#clientRequests.ask(child, message);
      return;
    }
    // Cancellations from the child concern requests of the agent's own Client.
    if ('method' in message) {
      if (message.method !== 'notifications/cancelled') this.#notificationFromChild(child, message);
      return;
    }
    if (!isRelayId(message.id)) return;
    const pending = this.#pending.get(message.id);
    // Unknown: answered already (timeout), or sent on an earlier connection.
    if (!pending) return;
    if (pending.child !== child) {
      // Relay ids are guessable; only the child that got the request may answer it.
      this.deps.warn(
        { server: child, id: message.id },
        `dropped an answer from MCP server "${child}" to a request sent to another server`,
      );
      return;
    }
    this.#forget(message.id);
    pending.span?.end('error' in message ? 'error' : undefined);
    const { server, remoteId } = pending;
    const answer = withMissing({ ...message, id: remoteId }, pending.missing);
    const outcome = this.#sendFromChild({ type: 'rpc', server, message: answer }, 'answer', {
      id: message.id,
    });
    if (outcome.sent) return;
    // Never lost silently: the server's client gets an error it can retry on.
    const reason = `answer of MCP server "${server}" dropped: ${outcome.reason}`;
    this.#reply(server, rpcError(remoteId, outcome.code, reason));
  }

  /** Sends what a child said; a frame that could not go is counted (congested) and warned about. */
  #sendFromChild(frame: RpcFrame, kind: DropKind, fields: Record<string, unknown>): SendOutcome {
    const outcome = this.deps.send(frame);
    if (outcome.sent) return outcome;
    if (outcome.code === RelayErrorCode.TooManyRequests) {
      this.deps.dropped?.('relay-send', frame.server, kind);
    }
    this.deps.warn(
      { server: frame.server, ...fields },
      `dropped ${kind === 'answer' ? 'an answer' : 'a notification'} from an MCP server: ${outcome.reason}`,
    );
    return outcome;
  }

  /** A client's process speaks only to its client; the relay finds that client's sessions. */
  #notificationFromChild(child: string, message: JSONRPCNotification): void {
    const server = serverOfKey(child);
    const name = child === server ? undefined : child.slice(server.length + 1);
    const frame: RpcFrame = { type: 'rpc', server, message, ...(name ? { client: { name } } : {}) };
    this.#sendFromChild(frame, 'notification', { method: truncateForLog(message.method, 64) });
  }

  /** The child `child` is gone: its pending requests fail now, not at the timeout. */
  sessionClosed(child: string): void {
    this.#clientRequests.serverGone(child);
    for (const [agentId, pending] of this.#pending) {
      if (pending.child === child) this.#fail(agentId, 'exited or stopped before answering');
    }
  }

  /** The connection is gone: nothing can be answered any more. */
  close(): void {
    this.#closed = true;
    this.#clientRequests.close();
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.span?.end('disconnected');
    }
    this.#pending.clear();
  }

  #timeout(agentId: string): void {
    const pending = this.#pending.get(agentId);
    if (!pending) return;
    this.#fail(
      agentId,
      `did not answer within ${this.deps.timeoutMs} ms`,
      RelayErrorCode.RequestTimeout,
    );
    // Tell the child to stop working on it.
    const params = { requestId: agentId, reason: 'timeout' };
    this.#toChild(pending.child, { jsonrpc: '2.0', method: 'notifications/cancelled', params });
  }

  /** A message the child may miss (it is gone, or its pipe broke): nobody waits on it. */
  #toChild(child: string, message: JSONRPCMessage): void {
    this.deps.sessions
      .session(child)
      ?.send(message)
      .catch(() => undefined);
  }

  /** Whether `message` finds no room in the child's stdin budget; if so, counted and warned. */
  #stdinFull(server: string, kind: DropKind, session: McpSession, message: unknown): boolean {
    // The message came from a decoded frame (4 MiB, 100 levels at most): this cannot throw.
    const bytes = Buffer.byteLength(JSON.stringify(message));
    if (session.waitingBytes() + bytes <= this.deps.maxStdinBytes) return false;
    this.deps.dropped?.('mcp-stdin', server, kind);
    this.deps.warn(
      { server, waitingBytes: session.waitingBytes(), bytes },
      `${kind === 'request' ? 'refused a relayed request' : 'dropped a relayed notification'}: too many bytes waiting for the MCP server to read them`,
    );
    return true;
  }

  #fail(agentId: string, reason: string, code: number = RelayErrorCode.ServerUnavailable): void {
    const pending = this.#forget(agentId);
    if (!pending) return;
    pending.span?.end(code === RelayErrorCode.RequestTimeout ? 'timeout' : 'unavailable');
    this.#reply(
      pending.server,
      rpcError(pending.remoteId, code, `MCP server "${pending.server}" ${reason}`),
    );
  }

  #forget(agentId: string): Pending | undefined {
    const pending = this.#pending.get(agentId);
    clearTimeout(pending?.timer);
    this.#pending.delete(agentId);
    return pending;
  }

  #agentIdOf(server: string, remoteId: unknown): string | undefined {
    for (const [agentId, pending] of this.#pending) {
      if (pending.server === server && pending.remoteId === remoteId) return agentId;
    }
    return undefined;
  }

  /** The agent's own answers: small, shallow, always encodable (the ids are the server's). */
  #reply(server: string, message: JSONRPCResponse): void {
    if (!this.#closed) this.deps.send({ type: 'rpc', server, message }, true);
  }
}

/** A relayed call's CLIENT span, its context passed on in `params._meta` (MCP's SEP-414). */
function startCallSpan(
  server: string,
  message: JSONRPCRequest,
  trace: TraceContext | undefined,
): { span?: Pick<ClientSpan, 'end'>; message: JSONRPCRequest } {
  const otel = tracing();
  if (!otel) return { message };
  const { name, attributes } = mcpSpan(message);
  const span = otel.startClientSpan(
    name,
    { ...attributes, 'plant_store.mcp_server': server },
    trace,
  );
  const params = message.params ?? {};
  const meta = { ...(params._meta ?? {}), ...span.carrier };
  return { span, message: { ...message, params: { ...params, _meta: meta } } };
}
