import { randomBytes, randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import {
  type ClientTag,
  type ProtocolServer,
  RelayErrorCode,
  type TraceContext,
} from '../../agent-protocol/relay-protocol.js';
import { encodeFrame, type FrameLimits } from '../../agent-protocol/frame-codec.js';
import type { AgentFrame } from './agent-frames.js';
import type { FrameRateLimit } from './frame-rate-limit.js';
import {
  cancelledError,
  isObject,
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../json-rpc/json-rpc.js';

type AgentRequest = Extract<AgentFrame, { kind: 'request' }>;

/** Receives the notifications an MCP server sends about one request (progress). */
export type RequestNotificationSink = (notification: Message) => void;

type Resolve = (response: JsonRpcResponse) => void;

interface Pending {
  /** The MCP server the request went to: only its answer counts. */
  server: string;
  resolve: Resolve;
  timer: NodeJS.Timeout;
  /** The client's event stream for this request: its progress and its server's requests. */
  sink?: RequestNotificationSink | undefined;
  progress?: { clientToken: unknown; relayToken: string; sink: RequestNotificationSink };
}

// One agent pod's WebSocket. Progress tokens become random ones, taken only from the server asked,
// so no server reaches another client's stream; a pod not reading gets -32005, not a buffer.
export class AgentConnection {
  /** Internal id, for logs and session pinning; never sent anywhere. */
  readonly id = randomUUID();
  agentId: string | undefined;
  version: string | undefined;
  servers: ProtocolServer[] = [];
  private nextRequestId = 1;
  private readonly pending = new Map<number, Pending>();
  /** The relay's progress tokens of the waiting requests, to their request ids. */
  private readonly progressIds = new Map<string, number>();
  private closed = false;
  // The clients each MCP server has served on this connection: a message that names no
  // request may be about any of them (docs/relay-server.md, Security).
  private readonly tenants = new Map<string, Set<string>>();
  /** It said hello: it is in the registry, and its answers and requests count. */
  greeted = false;
  /** Bytes of its last hello/inventory frame, held against the agent's inventory budget. */
  inventoryBytes = 0;
  /** Drops it unless it says hello in time (the gateway sets it). */
  helloTimer: NodeJS.Timeout | undefined;
  /** Set by `keepAlive`: pings it at once when a request timed out (it may be frozen). */
  private probe: () => void = () => undefined;

  constructor(
    readonly agent: string,
    private readonly socket: WebSocket,
    private readonly limits: FrameLimits,
    /** What it may send; the gateway drops it past a rate. */
    readonly rates: FrameRateLimit,
  ) {}

  // A silent pod (cut network, frozen node) would hold its sessions: cut (`onSilent` first) with no
  // pong by the next ping, or none `probeTimeoutMs` after the ping sent when a request timed out.
  keepAlive(pingMs: number, probeTimeoutMs: number, onSilent: () => void): void {
    let alive = true;
    let probe: NodeJS.Timeout | undefined;
    const silent = () => {
      onSilent();
      this.socket.terminate();
    };
    this.socket.on('pong', () => {
      alive = true;
      clearTimeout(probe);
      probe = undefined;
    });
    this.probe = () => {
      if (probe !== undefined || this.socket.readyState !== this.socket.OPEN) return;
      probe = setTimeout(silent, probeTimeoutMs);
      this.socket.ping();
    };
    const pinger = setInterval(() => {
      if (!alive) return silent();
      alive = false;
      this.socket.ping();
    }, pingMs);
    this.socket.once('close', () => {
      clearInterval(pinger);
      clearTimeout(probe);
    });
  }

  get open(): boolean {
    return !this.closed;
  }

  serves(server: string): boolean {
    return this.servers.some((s) => s.name === server && s.state === 'up');
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** Bytes waiting to be sent when more than a frame limit: the pod is not reading. */
  get congested(): number | undefined {
    const waiting = this.socket.bufferedAmount;
    return waiting > this.limits.maxFrameBytes ? waiting : undefined;
  }

  // Resolves under the relay's id (the caller restores the client's); `sink` gets progress with
  // the client's own token; `trace` rides in the frame so the agent's span continues the trace.
  request(
    server: string,
    message: Message,
    options: {
      timeoutMs: number;
      sink?: RequestNotificationSink | undefined;
      trace?: TraceContext | undefined;
      /** The client session it comes from: the agent passes its server's requests to it. */
      client?: ClientTag | undefined;
    },
  ): { id: number; response: Promise<JsonRpcResponse> } {
    const { timeoutMs, sink, trace, client } = options;
    const id = this.nextRequestId++;
    const response = new Promise<JsonRpcResponse>((resolve) => {
      if (this.closed) return resolve(closedError(id, this.agent));
      const waiting = this.congested;
      if (waiting !== undefined) {
        const refusal = congestionMessage(this.agent, waiting);
        return resolve(jsonRpcError(id, JsonRpcCode.Overloaded, refusal));
      }
      const timer = setTimeout(() => this.timedOut(id, server, timeoutMs, resolve), timeoutMs);
      const pending: Pending = { server, resolve, timer, sink };
      const clientToken = progressTokenOf(message);
      let sent = message;
      if (sink && clientToken !== undefined) {
        const relayToken = `relay-${randomBytes(16).toString('base64url')}`;
        pending.progress = { clientToken, relayToken, sink };
        this.progressIds.set(relayToken, id);
        sent = withProgressToken(message, relayToken);
      }
      this.pending.set(id, pending);
      const rpc = { ...sent, jsonrpc: '2.0', id };
      const refused = this.send({ type: 'rpc', server, message: rpc, client, trace });
      // A message the agent would refuse (too large, too deep) is never sent: the agent would
      // close the connection (1009) and end every session on it. Only this client is answered.
      if (refused !== undefined && this.finish(id)) {
        resolve(jsonRpcError(id, RelayErrorCode.MessageRejected, `message rejected: ${refused}`));
      }
    });
    return { id, response };
  }

  /** No answer in time: the MCP server is told to stop, and the client gets `-32003`. */
  private timedOut(id: number, server: string, timeoutMs: number, resolve: Resolve): void {
    if (!this.finish(id)) return;
    this.probe();
    this.notify(server, {
      method: 'notifications/cancelled',
      params: { requestId: id, reason: 'relay request timeout' },
    });
    const message = `agent "${this.agent}" did not answer within ${timeoutMs} ms`;
    resolve(jsonRpcError(id, RelayErrorCode.RequestTimeout, message));
  }

  /** Remembers that `client` sent `server` something on this connection. */
  served(server: string, client: string): void {
    this.tenants.set(server, (this.tenants.get(server) ?? new Set<string>()).add(client));
  }

  /** The one client `server` has served here; undefined for none or several. */
  soleClient(server: string): string | undefined {
    const clients = this.tenants.get(server);
    return clients?.size === 1 ? clients.values().next().value : undefined;
  }

  /** Ends a request the client cancelled: its waiter is answered, a late answer is dropped. */
  forget(id: number): void {
    this.finish(id)?.resolve(cancelledError(id));
  }

  // Returns why the notification was not sent (over the protocol's limits), if so. `onWritten`
  // runs once it has left the process or will not be sent.
  notify(
    server: string,
    message: Message,
    onWritten?: () => void,
    client?: ClientTag,
  ): string | undefined {
    const frame = { type: 'rpc', server, message: { ...message, jsonrpc: '2.0' }, client };
    return this.send(frame, onWritten);
  }

  /** An MCP server's request for the client of its waiting request `relatedId`, or an error. */
  ask({ server, id, message, relatedId }: AgentRequest): void {
    const pending = typeof relatedId === 'number' ? this.pending.get(relatedId) : undefined;
    if (pending?.server === server && pending.sink) return pending.sink(message);
    // The client's request ended, or its client reads no event stream: nobody to ask.
    const reason = 'no client request with an event stream is waiting for this MCP server';
    this.notify(server, { ...jsonRpcError(id, RelayErrorCode.NoClient, reason) });
  }

  /** An answer counts only from the server the request was sent to; the request waits else. */
  settle(server: string, id: JsonRpcId, message: Message): 'settled' | 'late' | 'wrong-server' {
    const pending = typeof id === 'number' ? this.pending.get(id) : undefined;
    if (pending === undefined) return 'late';
    if (pending.server !== server) return 'wrong-server';
    this.finish(id as number)?.resolve(message as unknown as JsonRpcResponse);
    return 'settled';
  }

  /** Progress for a waiting request of `server`, to its sink; false when it is about none. */
  deliver(server: string, message: Message): boolean {
    if (message.method !== 'notifications/progress') return false;
    const params = isObject(message.params) ? message.params : {};
    const token = params.progressToken;
    const id = typeof token === 'string' ? this.progressIds.get(token) : undefined;
    const pending = id === undefined ? undefined : this.pending.get(id);
    if (!pending?.progress || pending.server !== server) return false;
    const { clientToken, sink } = pending.progress;
    sink({ ...message, params: { ...params, progressToken: clientToken } });
    return true;
  }

  closedByPeer(): void {
    clearTimeout(this.helloTimer);
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.pending.keys()]) {
      this.finish(id)?.resolve(closedError(id, this.agent));
    }
  }

  /** Later frames are ignored; a peer that does not answer the close is cut after `graceMs`. */
  close(code: number, reason: string, graceMs?: number): void {
    this.socket.close(code, reason);
    if (graceMs !== undefined) setTimeout(() => this.socket.terminate(), graceMs).unref();
    this.closedByPeer();
  }

  private finish(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    clearTimeout(pending.timer);
    this.pending.delete(id);
    if (pending.progress) this.progressIds.delete(pending.progress.relayToken);
    return pending;
  }

  /** Undefined when sent (or the socket is closed: its close answers what is pending). */
  private send(frame: unknown, onWritten: () => void = () => undefined): string | undefined {
    const encoded = this.closed ? undefined : encodeFrame(frame, this.limits);
    if (!encoded?.ok) {
      onWritten();
      return encoded?.reason;
    }
    // A failed send closes the socket, which answers what is pending.
    this.socket.send(encoded.text, () => onWritten());
    return undefined;
  }
}

function progressTokenOf(message: Message): unknown {
  const params = isObject(message.params) ? message.params : undefined;
  const meta = params && isObject(params._meta) ? params._meta : undefined;
  return meta?.progressToken;
}

function withProgressToken(message: Message, token: string): Message {
  const params = message.params as Message;
  const meta = params._meta as Message;
  return { ...message, params: { ...params, _meta: { ...meta, progressToken: token } } };
}

export function congestionMessage(agent: string, waiting: number): string {
  return `a connection of agent "${agent}" is not reading: ${waiting} bytes wait to be sent to it; retry later`;
}

function closedError(id: number, agent: string): JsonRpcResponse {
  return jsonRpcError(
    id,
    RelayErrorCode.ServerUnavailable,
    `the connection of agent "${agent}" closed before it answered`,
  );
}
