import type { JSONRPCRequest, JSONRPCResponse } from '@modelcontextprotocol/client';
import {
  type ClientTag,
  MISSING_CAPABILITIES_META,
  RelayErrorCode,
  type RpcFrame,
  rpcError,
} from '../../agent-protocol/relay-protocol.js';
import { serverOfKey } from '../mcp/client-instances.js';
import { CLIENT_REQUEST_CAPABILITY } from '../mcp/relay-tap-transport.js';

/** A relayed request waiting for an MCP server's answer: whom an MCP server's request may reach. */
export interface InFlightRequest {
  remoteId: string | number;
  client: ClientTag | undefined;
  /** Capabilities its server asked the client for that the client had not declared. */
  missing?: Record<string, object>;
}

/** What became of an MCP server's request for its client (a metric label). */
export type ClientRequestOutcome =
  'relayed' | 'answered' | 'no_client' | 'ambiguous' | 'no_capability' | 'timeout' | 'refused';

export interface ClientRequestsDeps {
  /** Relayed requests in flight on the child `child` (a server, or a client's process of it). */
  inFlight(child: string): InFlightRequest[];
  /** As RequestRouter sends: says why when the frame could not be sent. */
  send(
    frame: RpcFrame<JSONRPCRequest>,
  ): { sent: true } | { sent: false; reason: string; code: number };
  /** Writes an answer to the child's stdin. */
  toChild(child: string, message: JSONRPCResponse): void;
  timeoutMs: number;
  /** Requests held for clients' answers, at most. */
  maxHeld: number;
  counted?: (server: string, outcome: ClientRequestOutcome) => void;
  warn: (fields: Record<string, unknown>, message: string) => void;
}

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

export const CLIENT_ID_PREFIX = 'agent:';
let lastId = 0;

/**
 * An MCP server's requests for its client (`sampling/createMessage`, `elicitation/create`,
 * `roots/list`). Stdio carries no "related request", so one goes to the client session whose
 * requests are the only ones in flight on that server (its oldest, named in the frame's
 * `relatedRequestId`), leaving out sessions whose call has waited for its client's answer
 * longer than a burst when others are in flight (a 2026 client's held MRTR call); with several
 * sessions, none, or a session without the capability, the MCP server gets an error at once
 * (the capability noted on its call's answer), never another client's answer. The answer
 * counts only from the session it was sent to, and within `timeoutMs`.
 */
export class ClientRequests {
  readonly #held = new Map<string, Held>();

  constructor(private readonly deps: ClientRequestsDeps) {}

  ask(child: string, request: JSONRPCRequest): void {
    const target = this.#target(child, request);
    if ('code' in target) return this.#refuse(child, request.id, target);
    if (this.#held.size >= this.deps.maxHeld) {
      const message = `too many requests wait for clients' answers (at most ${this.deps.maxHeld})`;
      return this.#refuse(child, request.id, refused(RelayErrorCode.TooManyRequests, message));
    }
    const id = `${CLIENT_ID_PREFIX}${++lastId}`;
    const outcome = this.deps.send({
      type: 'rpc',
      server: serverOfKey(child),
      message: { ...request, id },
      relatedRequestId: target.remoteId,
    });
    if (!outcome.sent) {
      return this.#refuse(child, request.id, refused(outcome.code, `not sent: ${outcome.reason}`));
    }
    const timer = setTimeout(() => this.#timeout(id), this.deps.timeoutMs);
    const sent = performance.now();
    this.#held.set(id, { child, childId: request.id, session: target.session, sent, timer });
    this.deps.counted?.(serverOfKey(child), 'relayed');
  }

  /** A client's answer: passed on only from the session that was asked, with the child's id. */
  answer(server: string, message: JSONRPCResponse, client: ClientTag | undefined): void {
    const key = String(message.id);
    const held = this.#held.get(key);
    if (!held || serverOfKey(held.child) !== server || held.session !== client?.session) {
      this.deps.warn({ server }, 'dropped a client answer to a request nobody asked it');
      return;
    }
    this.#forget(key);
    this.deps.toChild(held.child, { ...message, id: held.childId });
    this.deps.counted?.(server, 'answered');
  }

  /** The child is gone: nobody waits for its requests' answers any more. */
  serverGone(child: string): void {
    for (const [id, held] of this.#held) if (held.child === child) this.#forget(id);
  }

  close(): void {
    for (const id of [...this.#held.keys()]) this.#forget(id);
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
  #candidates(child: string): InFlightRequest[] {
    const requests = this.deps.inFlight(child);
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
    this.deps.counted?.(serverOfKey(child), refusal.outcome);
    this.deps.toChild(child, rpcError(childId, refusal.code, refusal.message));
  }

  #timeout(id: string): void {
    const held = this.#forget(id);
    if (!held) return;
    const message = `the client did not answer within ${this.deps.timeoutMs} ms`;
    this.#refuse(
      held.child,
      held.childId,
      refused(RelayErrorCode.RequestTimeout, message, 'timeout'),
    );
  }

  #forget(id: string): Held | undefined {
    const held = this.#held.get(id);
    clearTimeout(held?.timer);
    this.#held.delete(id);
    return held;
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
    return {
      ...message,
      result: { ...message.result, _meta: { ...message.result._meta, ...note } },
    };
  }
  const data = message.error.data;
  if (data !== undefined && (typeof data !== 'object' || data === null)) return message;
  return { ...message, error: { ...message.error, data: { ...data, ...note } } };
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
