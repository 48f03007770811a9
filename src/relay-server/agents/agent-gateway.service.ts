import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { WebSocketServer, type WebSocket } from 'ws';
import { CONNECT_PATH } from '../../agent-protocol/relay-protocol.js';
import type { FrameLimits } from '../../agent-protocol/frame-codec.js';
import { InFlightLimiter } from '../../common/async/in-flight-limiter.js';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { bearerToken, ownerOf } from '../auth/token-owner.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { type AgentFrame, parseAgentFrame } from './agent-frames.js';
import { AgentBudgets } from './agent-budgets.js';
import { AgentConnection } from './agent-connection.js';
import { AgentRegistry } from './agent-registry.service.js';
import { FrameRateLimit } from './frame-rate-limit.js';

/** A connection that has not said hello by then is dropped (it holds a socket and nothing else). */
const HELLO_TIMEOUT_MS = 10_000;
/** WebSocket close codes (RFC 6455). */
const POLICY_VIOLATION = 1008;
const MESSAGE_TOO_BIG = 1009;
const GOING_AWAY = 1001;
const ONE_LINE_PER_10_S = { ratePerSecond: 0.1, burst: 1 };
/** Connects, disconnects and drops of every agent together: a burst of 20, then 1 a second. */
const CONNECTION_LINES = { ratePerSecond: 1, burst: 20 };
/** How long a dropped connection has to answer the close before its socket is cut. */
const CLOSE_GRACE_MS = 2_000;
/** What a refused agent connection is told to wait (its own backoff may be longer). */
const RETRY_AFTER_SECONDS = 10;
/** The protocol's nesting limit (docs/agent-protocol.md "Limits"), both directions. */
const MAX_FRAME_DEPTH = 100;

// The agent endpoint (docs/agent-protocol.md); tokens are checked before any WebSocket exists.
// A bad frame drops only its connection (1008, too big 1009): one agent never takes the relay down.
@Injectable()
export class AgentGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly wss: WebSocketServer;
  private readonly path: string;
  private readonly limits: FrameLimits;
  private readonly budgets: AgentBudgets;
  /** Connections per agent from the upgrade on: one that never says hello holds a socket too. */
  private readonly connections: InFlightLimiter;
  /** Anyone can try tokens: a line per 10 s (the metric counts all; `suppressed` the rest). */
  private readonly refusedLog: RateLimitedLog;
  /** An agent can send answers as fast as it likes: a line per 10 s about misdirected ones. */
  private readonly misdirectedLog: RateLimitedLog;
  /** One token opening 1,500 connections must not write 3,000 lines. */
  private readonly connectionLog: RateLimitedLog;
  /** Drops apart, so that a connect flood does not hide why a peer was cut. */
  private readonly dropLog: RateLimitedLog;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly adapterHost: HttpAdapterHost,
    private readonly registry: AgentRegistry,
    @InjectMetric('relay_agent_rejections_total') private readonly rejections: Counter<'reason'>,
  ) {
    this.path = `${config.basePath}${CONNECT_PATH}`;
    this.refusedLog = new RateLimitedLog(logger, ONE_LINE_PER_10_S);
    this.misdirectedLog = new RateLimitedLog(logger, ONE_LINE_PER_10_S);
    this.connectionLog = new RateLimitedLog(logger, CONNECTION_LINES);
    this.dropLog = new RateLimitedLog(logger, CONNECTION_LINES);
    this.budgets = new AgentBudgets(config.agentBudgets);
    this.connections = new InFlightLimiter(config.agentBudgets.maxConnectionsPerAgent);
    this.limits = { maxFrameBytes: config.maxFrameBytes, maxDepth: MAX_FRAME_DEPTH };
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: config.maxFrameBytes,
      // Agents send JSON text; compression would let a small frame inflate past the limit's intent.
      perMessageDeflate: false,
    });
  }

  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(request, socket, head),
    );
  }

  /** SIGTERM: agents are told "going away" (1001) and reconnect elsewhere or later. */
  beforeApplicationShutdown(): void {
    for (const connection of this.registry.all())
      connection.close(GOING_AWAY, 'server shutting down');
    for (const client of this.wss.clients) client.close(GOING_AWAY, 'server shutting down');
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const path = new URL(request.url ?? '/', 'http://relay').pathname;
    if (path !== this.path) {
      this.refuse(socket, 404, 'not_found');
      return;
    }
    const agent = ownerOf(bearerToken(request.headers.authorization), this.config.agents);
    if (!agent) {
      this.refusedLog.warn({ remote: request.socket.remoteAddress }, 'agent token refused');
      this.refuse(socket, 401, 'unauthorized');
      return;
    }
    const release = this.connections.acquire(agent.name);
    if (!release) {
      this.refusedLog.warn(
        { agent: agent.name, max: this.config.agentBudgets.maxConnectionsPerAgent },
        'agent connection refused: the agent has as many connections as it may',
      );
      this.refuse(socket, 429, 'too_many_connections');
      return;
    }
    // The socket's close frees the slot, whether or not the upgrade completes.
    socket.once('close', release);
    this.wss.handleUpgrade(request, socket, head, (ws) => this.accept(ws, agent.name));
  }

  private refuse(socket: Duplex, status: 401 | 404 | 429, reason: string): void {
    this.rejections.inc({ reason });
    const extra = {
      401: 'WWW-Authenticate: Bearer realm="relay"\r\n',
      404: '',
      429: `Retry-After: ${RETRY_AFTER_SECONDS}\r\n`,
    }[status];
    const head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${extra}`;
    socket.end(`${head}Connection: close\r\nContent-Length: 0\r\n\r\n`);
  }

  private accept(ws: WebSocket, agent: string): void {
    const { maxFrameBytes } = this.limits;
    const rates = new FrameRateLimit({ ...this.config.agentRates, maxFrameBytes });
    const connection = new AgentConnection(agent, ws, this.limits, rates);
    const late = () => this.drop(connection, 'no hello frame in time');
    connection.helloTimer = setTimeout(late, HELLO_TIMEOUT_MS);
    const ids = { agent, connection: connection.id };
    connection.keepAlive(this.config.agentPingMs, this.config.agentProbeTimeoutMs, () => {
      this.rejections.inc({ reason: 'no_pong' });
      this.dropLog.warn(ids, 'agent connection did not answer a ping; dropping it');
    });
    ws.on('message', (data, isBinary) => this.onFrame(connection, data, isBinary));
    ws.on('error', (error) =>
      this.dropLog.warn({ ...ids, reason: error.message }, 'agent connection error'),
    );
    ws.on('close', (code) => this.onClose(connection, code));
  }

  private drop(connection: AgentConnection, reason: string, metric?: string, code?: number) {
    const { agent, id, greeted } = connection;
    this.rejections.inc({ reason: metric ?? (greeted ? 'invalid_frame' : 'no_hello') });
    this.dropLog.warn({ agent, connection: id, reason }, 'dropping agent connection');
    connection.close(code ?? POLICY_VIOLATION, reason, CLOSE_GRACE_MS);
  }

  private onFrame(connection: AgentConnection, data: WebSocket.RawData, isBinary: boolean) {
    if (!connection.open) return;
    const overCount = connection.rates.take('frames');
    if (overCount !== undefined) return this.drop(connection, overCount, 'rate_limited');
    // Binary frames are ignored by the protocol, but their bytes still count.
    // ws's default binaryType hands every message over as one Buffer.
    const frame = data as Buffer;
    const answered = !isBinary && this.handleFrame(connection, frame.toString('utf8'));
    if (answered || !connection.open) return;
    const overBytes = connection.rates.take('unasked', frame.length);
    if (overBytes !== undefined) this.drop(connection, overBytes, 'rate_limited');
  }

  private handleFrame(connection: AgentConnection, text: string): boolean {
    const frame = parseAgentFrame(text, this.limits);
    if (!connection.greeted && ['response', 'notification', 'request'].includes(frame.kind)) {
      this.drop(connection, 'rpc before hello');
      return false;
    }
    switch (frame.kind) {
      case 'hello':
      case 'inventory':
        this.onInventory(connection, frame, Buffer.byteLength(text));
        return false;
      case 'response': {
        const outcome = connection.settle(frame.server, frame.id, frame.message);
        if (outcome === 'wrong-server') this.misdirected(connection, frame.server);
        return outcome === 'settled';
      }
      case 'notification':
        // Progress goes to the waiting request of that server it is about; the rest to
        // the registry's listeners (McpRelayService decides which sessions hear it).
        if (!connection.deliver(frame.server, frame.message)) {
          this.registry.emit('notification', connection, frame.server, frame.message, frame.client);
        }
        return false;
      case 'request':
        connection.ask(frame);
        return false;
      case 'unknown':
        // Ignored, as the protocol says: either side may add frame types.
        return false;
      case 'invalid':
        this.drop(connection, frame.reason, undefined, frame.tooBig ? MESSAGE_TOO_BIG : undefined);
        return false;
    }
  }

  /** A hello or inventory: charged to the connection's rate and the agent's inventory budget. */
  private onInventory(
    connection: AgentConnection,
    frame: Extract<AgentFrame, { kind: 'hello' | 'inventory' }>,
    bytes: number,
  ): void {
    const { agent, greeted } = connection;
    if (frame.kind === 'inventory' && !greeted)
      return this.drop(connection, 'inventory before hello');
    const overRate = connection.rates.take('inventory', bytes);
    if (overRate !== undefined) return this.drop(connection, overRate, 'rate_limited');
    if (!this.budgets.replaceInventory(agent, connection.inventoryBytes, bytes)) {
      const reason = `the agent's inventories would pass ${this.config.agentBudgets.maxInventoryBytesPerAgent} bytes`;
      return this.drop(connection, reason, 'inventory_budget');
    }
    connection.inventoryBytes = bytes;
    if (frame.kind === 'hello') {
      connection.agentId = frame.agentId;
      connection.version = frame.version;
    }
    if (greeted) return this.registry.setInventory(connection, frame.servers);
    connection.greeted = true;
    clearTimeout(connection.helloTimer);
    connection.servers = frame.servers;
    this.registry.add(connection);
    const { id, agentId, version } = connection;
    this.connectionLog.info({ agent, connection: id, agentId, version }, 'agent connected');
  }

  private misdirected({ agent, id }: AgentConnection, server: string): void {
    this.misdirectedLog.warn(
      { agent, connection: id, server: server.slice(0, 64) },
      'dropping an answer from a server the request was not sent to',
    );
  }

  private onClose(connection: AgentConnection, code: number): void {
    const { agent, id } = connection;
    connection.closedByPeer();
    this.budgets.replaceInventory(agent, connection.inventoryBytes, 0);
    if (!connection.greeted) return;
    this.registry.remove(connection);
    this.connectionLog.info({ agent, connection: id, code }, 'agent disconnected');
  }
}
