import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import WebSocket, { type ClientOptions, type RawData } from 'ws';
import type { Secret } from '../../config/secret.js';
import { Backoff, DEFAULT_BACKOFF } from '../../common/retry/backoff.js';
import type { McpSessions } from '../mcp/mcp-supervisor.service.js';
import { truncateForLog } from '../../common/logging/truncate-for-log.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { DEFAULT_FRAME_LIMITS, encodeFrame } from '../../agent-protocol/frame-codec.js';
import {
  type AgentFrame,
  parseServerFrame,
  RelayErrorCode,
  rpcError,
  toProtocolServers,
} from '../../agent-protocol/relay-protocol.js';
import { RequestRouter, type RequestRouterDeps, type SendOutcome } from './request-router.js';

export const DEFAULT_RELAY_TIMINGS = {
  pingIntervalMs: 30_000,
  pongTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  /** An MCP server's request for its client waits this long for the client's answer. */
  clientAnswerTimeoutMs: 30_000,
  /** Past a relay's wait for a TLS turn (25 s by default), so a storm's agents wait, not retry. */
  handshakeTimeoutMs: 30_000,
  /** A connection that lasted this long resets the backoff. */
  stableMs: 10_000,
  backoff: DEFAULT_BACKOFF,
};

export type RelayTimings = typeof DEFAULT_RELAY_TIMINGS;

export const DEFAULT_RELAY_LIMITS = {
  frame: DEFAULT_FRAME_LIMITS,
  /** Relayed requests waiting for an MCP server's answer, at most (over it: -32005). */
  maxInFlight: 1_000,
  /** Bytes waiting to be written to one MCP server's stdin, past which relayed messages are refused. */
  maxStdinBytes: 16 * 1024 * 1024,
  /** Bytes waiting in the connection's send queue before MCP servers' messages are dropped. */
  maxQueuedBytes: 16 * 1024 * 1024,
};

export type RelayLimits = typeof DEFAULT_RELAY_LIMITS;

/** How often a held-back connection checks whether its send queue has drained. */
const DRAIN_POLL_MS = 50;

/** Node's codes for a certificate chain that ends at no CA it trusts. */
const UNTRUSTED_CERTIFICATE = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/** `dropped` and `clientRequest` count for the agent's metrics. */
export interface AgentRelayClientOptions extends Pick<
  RequestRouterDeps,
  'dropped' | 'clientRequest'
> {
  url: URL;
  token: Secret;
  agentId: string;
  version: string;
  sessions: McpSessions;
  logger: Logger;
  connectedGauge: Gauge<string>;
  timings: RelayTimings;
  limits?: RelayLimits;
  /** Extra TLS options, for tests only (production relies on NODE_EXTRA_CA_CERTS). */
  tls?: Pick<ClientOptions, 'ca'>;
}

export const TOKEN_REJECTED = 'agent token rejected by server';

/**
 * The agent's one outbound WebSocket to its server: hello, inventory, JSON-RPC both ways, ping,
 * reconnect with backoff. The token goes in the Authorization header only; bad frames are
 * warned about at a bounded rate; past `maxQueuedBytes` queued, MCP messages are refused.
 */
export class AgentRelayClient {
  readonly #backoff: Backoff;
  readonly #logger: Logger;
  readonly #limits: RelayLimits;
  /** Warnings caused by what the server or an MCP server sent: a junk flood is not a log flood. */
  readonly #peerWarnings: RateLimitedLog;
  /** Set while the server's frames are not read, until the send queue drains. */
  #drainTimer: NodeJS.Timeout | undefined;
  #socket: WebSocket | undefined;
  #router: RequestRouter | undefined;
  #openedAt: number | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #pongTimer: NodeJS.Timeout | undefined;
  #lastInventory = '';
  #lastError: string | undefined;
  #tokenRejected = false;
  #reconnects = 0;
  #certificateHintGiven = false;
  #stopped = true;

  constructor(private readonly options: AgentRelayClientOptions) {
    this.#backoff = new Backoff(options.timings.backoff);
    this.#logger = options.logger.child({ context: 'AgentRelay' });
    this.#limits = options.limits ?? DEFAULT_RELAY_LIMITS;
    this.#peerWarnings = new RateLimitedLog(this.#logger);
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.options.sessions.setListener({
      changed: () => this.#sendInventory(),
      message: (server, message) => this.#fromChild(server, message),
      closed: (server) => this.#router?.sessionClosed(server),
    });
    this.#connect();
  }

  /** Closes the connection for good (1001 "going away"). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#reconnectTimer);
    this.options.sessions.setListener(undefined);
    const socket = this.#socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    if (socket.readyState === WebSocket.OPEN) socket.close(1001, 'agent shutting down');
    else socket.terminate();
    // A peer that never answers the close handshake must not hold up the shutdown.
    const timer = setTimeout(() => socket.terminate(), 2_000);
    await closed;
    clearTimeout(timer);
  }

  /** `tokenRejected`: the server refused the token (HTTP 401/403), retried at the longest backoff. */
  status() {
    return {
      enabled: true,
      connected: this.#openedAt !== undefined,
      url: this.options.url.href,
      agentId: this.options.agentId,
      connectedSince:
        this.#openedAt === undefined ? undefined : new Date(this.#openedAt).toISOString(),
      tokenRejected: this.#tokenRejected,
      reconnects: this.#reconnects,
      lastError: this.#lastError,
    };
  }

  #connect(): void {
    if (this.#stopped) return;
    const { url, token, version, timings } = this.options;
    const socket = new WebSocket(url, {
      headers: {
        Authorization: `Bearer ${token.reveal()}`,
        'User-Agent': `plant-store-agent/${version}`,
      },
      handshakeTimeout: timings.handshakeTimeoutMs,
      followRedirects: false,
      // A frame over the limit is refused while it arrives (1009), before it is buffered whole.
      maxPayload: this.#limits.frame.maxFrameBytes,
      ...this.options.tls,
      // Explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0 cannot turn verification off.
      rejectUnauthorized: true,
    });
    this.#socket = socket;
    let httpStatus: number | undefined;

    socket.on('unexpected-response', (_request, response) => {
      httpStatus = response.statusCode;
      response.resume();
      socket.terminate();
    });
    socket.on('open', () => this.#onOpen(socket));
    socket.on('message', (data, isBinary) => this.#onMessage(socket, data, isBinary));
    socket.on('pong', () => clearTimeout(this.#pongTimer));
    // Without a listener an 'error' would crash the process; 'close' always follows it.
    socket.on('error', (error) => {
      if (httpStatus === undefined) this.#lastError = error.message;
      this.#hintAtTrustedCertificates(error);
    });
    socket.on('close', (code, reason) =>
      this.#onClose(socket, httpStatus, code, reason.toString()),
    );
  }

  /** Once per process: every retry meets the same certificate, and each retry logs its error. */
  #hintAtTrustedCertificates(error: NodeJS.ErrnoException): void {
    if (this.#certificateHintGiven || !UNTRUSTED_CERTIFICATE.has(error.code ?? '')) return;
    this.#certificateHintGiven = true;
    this.#logger.warn(
      { code: error.code },
      `the agent server's certificate is not trusted (${error.message}): if it is self-signed or from a private CA, give that certificate's PEM file in NODE_EXTRA_CA_CERTS`,
    );
  }

  #onOpen(socket: WebSocket): void {
    this.#openedAt = Date.now();
    this.#tokenRejected = false;
    this.#lastError = undefined;
    this.options.connectedGauge.set(1);
    this.#router = new RequestRouter({
      sessions: this.options.sessions,
      send: (frame, always) => this.#send(socket, frame, always),
      timeoutMs: this.options.timings.requestTimeoutMs,
      clientAnswerTimeoutMs: this.options.timings.clientAnswerTimeoutMs,
      clientRequest: this.options.clientRequest,
      maxInFlight: this.#limits.maxInFlight,
      maxStdinBytes: this.#limits.maxStdinBytes,
      dropped: this.options.dropped,
      warn: (fields, message) => this.#peerWarnings.warn(fields, message),
    });
    const servers = toProtocolServers(this.options.sessions.servers(), this.#limits.frame);
    this.#lastInventory = this.#inventoryKey(servers);
    const agent = { id: this.options.agentId, version: this.options.version };
    this.#send(socket, { type: 'hello', agent, servers }, true);
    this.#logger.info(
      { url: this.options.url.href, servers: servers.length },
      'connected to the agent server',
    );
    this.#pingTimer = setInterval(() => this.#ping(socket), this.options.timings.pingIntervalMs);
  }

  #onMessage(socket: WebSocket, data: RawData, isBinary: boolean): void {
    const router = this.#router;
    if (socket !== this.#socket || !router) return;
    if (isBinary) {
      this.#peerWarnings.warn({}, 'ignored a binary frame from the agent server');
      return;
    }
    // ws's default binaryType: every message arrives as one Buffer, fragments joined.
    const text = (data as Buffer).toString('utf8');
    this.#guarded({}, 'a frame from the agent server', () => this.#dispatch(socket, router, text));
  }

  /** Runs in a child's stdout handler: nothing may escape it (it would end the process). */
  #fromChild(server: string, message: JSONRPCMessage): void {
    this.#guarded({ server }, 'a message from an MCP server', () =>
      this.#router?.fromChild(server, message),
    );
  }

  /** The last net: whatever a peer sends, the process (and the plant API) stays up. */
  #guarded(fields: Record<string, unknown>, what: string, handle: () => void): void {
    try {
      handle();
    } catch (error) {
      const reason = truncateForLog((error as Error).message);
      this.#peerWarnings.warn({ ...fields, reason }, `dropped ${what} that could not be handled`);
    }
  }

  #dispatch(socket: WebSocket, router: RequestRouter, text: string): void {
    const frame = parseServerFrame(text, this.#limits.frame);
    switch (frame.kind) {
      case 'request':
        router.request(frame.server, frame.message, frame.trace, frame.client);
        break;
      case 'response':
        router.response(frame.server, frame.message, frame.client);
        break;
      case 'notification':
        router.notification(frame.server, frame.message, frame.client);
        break;
      case 'invalid-request': {
        const message = rpcError(frame.id, frame.code, frame.reason);
        this.#send(socket, { type: 'rpc', server: frame.server, message }, true);
        this.#peerWarnings.warn(
          { server: truncateForLog(frame.server, 64), code: frame.code },
          `refused a request from the agent server: ${frame.reason}`,
        );
        break;
      }
      case 'ignored':
        this.#peerWarnings.warn(
          { frame: truncateForLog(text) },
          `ignored a frame from the agent server: ${frame.reason}`,
        );
        break;
    }
  }

  #ping(socket: WebSocket): void {
    if (socket.readyState !== WebSocket.OPEN) return;
    socket.ping();
    clearTimeout(this.#pongTimer);
    this.#pongTimer = setTimeout(() => {
      this.#lastError = `no pong within ${this.options.timings.pongTimeoutMs} ms`;
      this.#logger.warn(`${this.#lastError}; reconnecting`);
      socket.terminate();
    }, this.options.timings.pongTimeoutMs);
  }

  #onClose(socket: WebSocket, httpStatus: number | undefined, code: number, reason: string): void {
    if (socket !== this.#socket) return;
    this.#socket = undefined;
    clearInterval(this.#pingTimer);
    clearTimeout(this.#pongTimer);
    clearInterval(this.#drainTimer);
    this.#drainTimer = undefined;
    this.#router?.close();
    this.#router = undefined;
    const wasOpenFor = this.#openedAt === undefined ? undefined : Date.now() - this.#openedAt;
    this.#openedAt = undefined;
    this.options.connectedGauge.set(0);
    if (this.#stopped) return;

    let delay: number;
    if (httpStatus === 401 || httpStatus === 403) {
      // Retrying a refused token quickly only floods the server's logs: wait the longest.
      this.#tokenRejected = true;
      this.#lastError = `${TOKEN_REJECTED} (HTTP ${httpStatus})`;
      delay = this.#backoff.max();
      this.#logger.error({ status: httpStatus, retryInMs: delay }, TOKEN_REJECTED);
    } else {
      if (wasOpenFor !== undefined && wasOpenFor >= this.options.timings.stableMs)
        this.#backoff.reset();
      if (httpStatus !== undefined) this.#lastError = `agent server answered HTTP ${httpStatus}`;
      else if (wasOpenFor !== undefined && this.#lastError === undefined) {
        this.#lastError = `connection closed (${code}${reason ? ` ${reason}` : ''})`;
      }
      delay = this.#backoff.next();
      this.#logger.warn(
        { retryInMs: delay },
        `${wasOpenFor === undefined ? 'cannot connect to' : 'lost the connection to'} the agent server: ${this.#lastError ?? 'unknown error'}`,
      );
    }
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnects++;
      this.#connect();
    }, delay);
  }

  #sendInventory(): void {
    const socket = this.#socket;
    if (!socket || this.#openedAt === undefined) return;
    const servers = toProtocolServers(this.options.sessions.servers(), this.#limits.frame);
    const json = this.#inventoryKey(servers);
    if (json === this.#lastInventory) return;
    const outcome = this.#send(socket, { type: 'inventory', servers });
    // Congested: sent once the queue drains (#holdBack), the latest inventory only.
    if (outcome.sent || outcome.code !== RelayErrorCode.TooManyRequests) this.#lastInventory = json;
  }

  /** What tells two inventories apart; never throws (an unencodable one is always "new"). */
  #inventoryKey(servers: unknown): string {
    const encoded = encodeFrame(servers, this.#limits.frame);
    return encoded.ok ? encoded.text : `<${encoded.reason}>`;
  }

  /** Sends a frame within the limits and, unless `always`, the send queue's room. */
  #send(socket: WebSocket, frame: AgentFrame, always = false): SendOutcome {
    if (socket.readyState !== WebSocket.OPEN) return { sent: true };
    const encoded = encodeFrame(frame, this.#limits.frame);
    if (!encoded.ok) {
      if (frame.type !== 'rpc') {
        // hello/inventory carry the MCP servers' tool lists: one server's absurd schema.
        this.#peerWarnings.warn({}, `dropped a ${frame.type} frame: ${encoded.reason}`);
      }
      return { sent: false, reason: encoded.reason, code: RelayErrorCode.MessageRejected };
    }
    const max = this.#limits.maxQueuedBytes;
    const queued = socket.bufferedAmount;
    if (!always && queued + Buffer.byteLength(encoded.text) > max) {
      this.#holdBack(socket);
      const reason = `${queued} bytes are waiting to be sent to the agent server (at most ${max})`;
      return { sent: false, reason, code: RelayErrorCode.TooManyRequests };
    }
    this.#write(socket, encoded.text, frame.type);
    if (socket.bufferedAmount > max) this.#holdBack(socket);
    return { sent: true };
  }

  // A method of its own so that the callback, held while the text is queued, holds the frame's
  // type, not the frame: a queued MCP message would otherwise be kept twice.
  #write(socket: WebSocket, text: string, type: AgentFrame['type']): void {
    socket.send(text, (error) => {
      if (error) this.#logger.warn(`sending a ${type} frame failed: ${error.message}`);
    });
  }

  /** Stops reading the server's frames until the send queue has drained to half its limit. */
  #holdBack(socket: WebSocket): void {
    if (this.#drainTimer !== undefined) return;
    socket.pause();
    this.#drainTimer = setInterval(() => {
      if (socket.bufferedAmount > this.#limits.maxQueuedBytes / 2) return;
      clearInterval(this.#drainTimer);
      this.#drainTimer = undefined;
      socket.resume();
      this.#sendInventory();
    }, DRAIN_POLL_MS);
  }
}
