import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResponse,
} from '@modelcontextprotocol/client';
import { serverOfKey } from '../mcp/client-instances.js';
import {
  CLIENT_REQUEST_CAPABILITY,
  isRelayId,
  RELAY_ID_PREFIX,
} from '../mcp/relay-tap-transport.js';
import type { McpSession } from '../mcp/mcp-server-runner.js';
import type { McpSessions } from '../mcp/mcp-supervisor.service.js';
import { errorMessage } from '../../common/errors/error-message.js';
import { truncateForLog } from '../../common/logging/truncate-for-log.js';
import { mcpSpan } from '../../common/tracing/mcp-attributes.js';
import type { ClientSpan } from '../../common/tracing/otel.js';
import { tracing } from '../../common/tracing/tracing.js';
import {
  type ClientTag,
  MISSING_CAPABILITIES_META,
  RelayErrorCode,
  type RpcFrame,
  rpcError,
  type TraceContext,
} from '../../agent-protocol/relay-protocol.js';

/** Whether the connection took a frame to send, and if not, why. */
export type SendOutcome =
  | { sent: true }
  /** `code`: -32005 when the connection's send queue is full, -32004 when the frame is refused. */
  | { sent: false; reason: string; code: number };

/** Where a message was dropped for lack of room: a child's stdin, or the connection. */
export type DropPlace = 'mcp-stdin' | 'relay-send';
export type DropKind = 'request' | 'notification' | 'answer';

/** What became of an MCP server's request for its client (a metric label). */
export type ClientRequestOutcome =
  'relayed' | 'answered' | 'no_client' | 'ambiguous' | 'no_capability' | 'timeout' | 'refused';

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
  /** Relayed requests waiting for an answer, at most; as many MCP servers' requests for clients. */
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
  /** Capabilities its server asked the client for that the client had not declared. */
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

/** An MCP server's request waiting for its client's answer. */
interface Held {
  child: string;
  childId: string | number;
  session: string;
  /** When it was sent (performance.now()). */
  sent: number;
  timer: NodeJS.Timeout;
}

/** A server's requests sent together (one call asking several things) arrive within this. */
const BURST_MS = 20;

type Target = { remoteId: string | number; session: string };
type Refusal = { outcome: ClientRequestOutcome; code: number; message: string };

let lastAgentId = 0;
const nextAgentId = (): string => `${RELAY_ID_PREFIX}${++lastAgentId}`;
let lastClientRequestId = 0;

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
 *
 * An MCP server's requests for its client (`sampling/createMessage`, `elicitation/create`,
 * `roots/list`) are held under an agent id (`agent:<n>`). Stdio carries no "related request",
 * so one goes to the client session whose requests are the only ones in flight on that child
 * (its oldest, named in the frame's `relatedRequestId`; see #candidates); with several
 * sessions, none, or a session without the capability, the MCP server gets an error at once
 * (the capability noted on its call's answer), never another client's answer. The answer
 * counts only from the session it was sent to, and within `clientAnswerTimeoutMs`.
 */
export class RequestRouter {
  readonly #pending = new Map<string, Pending>();
  readonly #held = new Map<string, Held>();
  #closed = false;

  constructor(private readonly deps: RequestRouterDeps) {}

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
    const pending = agentId === undefined ? undefined : take(this.#pending, agentId);
    if (!pending) return;
    pending.span?.end('cancelled');
    // Small and one per request at most: always written, so the child can stop working.
    this.#toChild(pending.child, { ...message, params: { ...message.params, requestId: agentId } });
  }

  /** A client's answer: passed on only from the session that was asked, with the child's id. */
  response(server: string, message: JSONRPCResponse, client: ClientTag | undefined): void {
    const key = String(message.id);
    const held = this.#held.get(key);
    if (!held || serverOfKey(held.child) !== server || held.session !== client?.session) {
      this.deps.warn({ server }, 'dropped a client answer to a request nobody asked it');
      return;
    }
    take(this.#held, key);
    this.#toChild(held.child, { ...message, id: held.childId });
    this.deps.clientRequest?.(server, 'answered');
  }

  /** A relayed response, a notification, or a request for the client from the child `child`. */
  fromChild(child: string, message: JSONRPCMessage): void {
    if (this.#closed) return;
    if ('method' in message && 'id' in message) {
      this.#ask(child, message);
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
    take(this.#pending, message.id);
    pending.span?.end('error' in message ? 'error' : undefined);
    const { server, remoteId } = pending;
    const answer = withMissing({ ...message, id: remoteId }, pending.missing);
    const frame: RpcFrame = { type: 'rpc', server, message: answer };
    const outcome = this.#sendFromChild(frame, 'answer', { id: message.id });
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
    for (const [id, held] of this.#held) if (held.child === child) take(this.#held, id);
    for (const [agentId, pending] of this.#pending) {
      if (pending.child === child) this.#fail(agentId, 'exited or stopped before answering');
    }
  }

  /** The connection is gone: nothing can be answered any more. */
  close(): void {
    this.#closed = true;
    for (const id of [...this.#held.keys()]) take(this.#held, id);
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.span?.end('disconnected');
    }
    this.#pending.clear();
  }

  /** An MCP server's request for its client: sent to the one client it can be for, or refused. */
  #ask(child: string, request: JSONRPCRequest): void {
    const target = this.#target(child, request);
    if ('code' in target) return this.#refuse(child, request.id, target);
    // Each held request stands for one more in flight: the same cap bounds both.
    if (this.#held.size >= this.deps.maxInFlight) {
      const message = `too many requests wait for clients' answers (at most ${this.deps.maxInFlight})`;
      return this.#refuse(child, request.id, refused(RelayErrorCode.TooManyRequests, message));
    }
    const id = `agent:${++lastClientRequestId}`;
    const outcome = this.deps.send({
      type: 'rpc',
      server: serverOfKey(child),
      message: { ...request, id },
      relatedRequestId: target.remoteId,
    });
    if (!outcome.sent) {
      return this.#refuse(child, request.id, refused(outcome.code, `not sent: ${outcome.reason}`));
    }
    const timer = setTimeout(() => this.#clientTimeout(id), this.deps.clientAnswerTimeoutMs);
    const sent = performance.now();
    this.#held.set(id, { child, childId: request.id, session: target.session, sent, timer });
    this.deps.clientRequest?.(serverOfKey(child), 'relayed');
  }

  #target(child: string, request: JSONRPCRequest): Target | Refusal {
    const requests = this.#candidates(child);
    const to = requests[0];
    const { NoClient } = RelayErrorCode;
    if (!to)
      return refused(NoClient, 'no client request is in flight on this MCP server', 'no_client');
    if (new Set(requests.map((r) => r.client?.session)).size > 1) {
      const message =
        'several clients have requests in flight on this MCP server: whom it asks is unknown';
      return refused(NoClient, message, 'ambiguous');
    }
    const session = to.client?.session;
    if (!to.client || session === undefined) {
      return refused(NoClient, 'the client of the request in flight cannot be asked', 'no_client');
    }
    if (!declares(to.client, request)) {
      const capability = CLIENT_REQUEST_CAPABILITY[request.method] ?? request.method;
      to.missing = { ...to.missing, [capability]: {} };
      const message = `the client did not declare the ${capability} capability`;
      return refused(-32601, message, 'no_capability');
    }
    return { remoteId: to.remoteId, session };
  }

  /**
   * The requests in flight on `child` that may be asking; with several sessions, not those
   * already waiting for their client's answer (a call blocked on its client is not the caller),
   * unless it asked within BURST_MS: then this request may be one more of that call's.
   */
  #candidates(child: string): Pending[] {
    const requests = [...this.#pending.values()].filter((p) => p.child === child);
    if (new Set(requests.map((r) => r.client?.session)).size < 2) return requests;
    const waiting = new Set<string>();
    const burst = performance.now() - BURST_MS;
    for (const held of this.#held.values()) {
      if (held.child === child && held.sent < burst) waiting.add(held.session);
    }
    return requests.filter(
      (r) => r.client?.session === undefined || !waiting.has(r.client.session),
    );
  }

  #refuse(child: string, childId: string | number, refusal: Refusal): void {
    this.deps.clientRequest?.(serverOfKey(child), refusal.outcome);
    this.#toChild(child, rpcError(childId, refusal.code, refusal.message));
  }

  #clientTimeout(id: string): void {
    const held = take(this.#held, id);
    if (!held) return;
    const message = `the client did not answer within ${this.deps.clientAnswerTimeoutMs} ms`;
    const refusal = refused(RelayErrorCode.RequestTimeout, message, 'timeout');
    this.#refuse(held.child, held.childId, refusal);
  }

  #timeout(agentId: string): void {
    const reason = `did not answer within ${this.deps.timeoutMs} ms`;
    const pending = this.#fail(agentId, reason, RelayErrorCode.RequestTimeout);
    if (!pending) return;
    // Tell the child to stop working on it.
    const params = { requestId: agentId, reason: 'timeout' };
    this.#toChild(pending.child, { jsonrpc: '2.0', method: 'notifications/cancelled', params });
  }

  /** A message the child may miss (it is gone, or its pipe broke): nobody waits on it. */
  #toChild(child: string, message: JSONRPCMessage): void {
    const session = this.deps.sessions.session(child);
    session?.send(message).catch(() => undefined);
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

  /** Answers the request with an error; returns what was pending, if it still was. */
  #fail(agentId: string, reason: string, code: number = RelayErrorCode.ServerUnavailable) {
    const pending = take(this.#pending, agentId);
    if (!pending) return undefined;
    pending.span?.end(code === RelayErrorCode.RequestTimeout ? 'timeout' : 'unavailable');
    const message = `MCP server "${pending.server}" ${reason}`;
    this.#reply(pending.server, rpcError(pending.remoteId, code, message));
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

/** The server's answer with the capabilities its client lacked noted (the relay reads them). */
export function withMissing(
  message: JSONRPCResponse,
  missing: Record<string, object> | undefined,
): JSONRPCResponse {
  if (!missing) return message;
  const note = { [MISSING_CAPABILITIES_META]: missing };
  if ('result' in message) {
    const result = { ...message.result, _meta: { ...message.result._meta, ...note } };
    return { ...message, result };
  }
  const data = message.error.data;
  if (data !== undefined && (typeof data !== 'object' || data === null)) return message;
  return { ...message, error: { ...message.error, data: { ...data, ...note } } };
}

/** Removes the entry `id` and stops its timer. */
function take<T extends { timer: NodeJS.Timeout }>(map: Map<string, T>, id: string): T | undefined {
  const entry = map.get(id);
  clearTimeout(entry?.timer);
  map.delete(id);
  return entry;
}

function refused(
  code: number,
  message: string,
  outcome: ClientRequestOutcome = 'refused',
): Refusal {
  return { outcome, code, message };
}

/** The client declared the capability the request needs, and the elicitation mode it uses. */
function declares(client: ClientTag, request: JSONRPCRequest): boolean {
  const name = CLIENT_REQUEST_CAPABILITY[request.method];
  const capability = name === undefined ? undefined : client.capabilities?.[name];
  if (typeof capability !== 'object' || capability === null) return false;
  if (request.method !== 'elicitation/create') return true;
  // An empty elicitation capability means form mode only (MCP 2025-11-25).
  const modes = Object.keys(capability);
  if (request.params?.mode === 'url') return modes.includes('url');
  return modes.length === 0 || modes.includes('form');
}

/** A relayed call's CLIENT span, its context passed on in `params._meta` (MCP's SEP-414). */
function startCallSpan(
  server: string,
  message: JSONRPCRequest,
  trace: TraceContext | undefined,
): { span?: Pick<ClientSpan, 'end'>; message: JSONRPCRequest } {
  const otel = tracing();
  if (!otel) return { message };
  const call = mcpSpan(message);
  const attributes = { ...call.attributes, 'plant_store.mcp_server': server };
  const span = otel.startClientSpan(call.name, attributes, trace);
  const params = message.params ?? {};
  const meta = { ...(params._meta ?? {}), ...span.carrier };
  return { span, message: { ...message, params: { ...params, _meta: meta } } };
}
