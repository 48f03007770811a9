import type { IncomingMessage, Server } from 'node:http';
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
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { bearerToken, ownerOf } from '../auth/token-owner.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { parseAgentFrame } from './agent-frames.js';
import { AgentConnection } from './agent-connection.js';
import { AgentRegistry } from './agent-registry.service.js';

/** A connection that has not said hello by then is dropped (it holds a socket and nothing else). */
const HELLO_TIMEOUT_MS = 10_000;
/** WebSocket close codes (RFC 6455): policy violation, going away. */
const POLICY_VIOLATION = 1008;
const MESSAGE_TOO_BIG = 1009;
const GOING_AWAY = 1001;
const ONE_LINE_PER_10_S = { ratePerSecond: 0.1, burst: 1 };
/** The protocol's nesting limit (docs/agent-protocol.md "Limits"), both directions. */
const MAX_FRAME_DEPTH = 100;

/**
 * The agent endpoint: `<base>/agent/v1/connect` on the public port (docs/agent-protocol.md).
 * The agent token is checked at the upgrade, before any WebSocket exists (401 otherwise).
 * Frames are bounded by RELAY_MAX_FRAME_BYTES (ws closes with 1009 past it) and nested at most
 * 100 levels deep; a frame that is not valid JSON, nested deeper, or a malformed
 * hello/inventory/rpc drops that connection (1008) and answers its waiting clients, nothing
 * else: one agent never takes the relay down. Frames of unknown types are ignored, as the protocol says.
 */
@Injectable()
export class AgentGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly wss: WebSocketServer;
  private readonly path: string;
  /**
   * Anyone can try tokens: one log line per 10 s at most (the metric counts every one). The
   * line that passes carries how many were left unlogged (`suppressed`).
   */
  private readonly refusedLog: RateLimitedLog;
  /** An agent can send answers as fast as it likes: one line per 10 s about misdirected ones. */
  private readonly misdirectedLog: RateLimitedLog;
  private readonly limits: FrameLimits;

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
      this.refuse(socket, 404, 'Not Found', 'not_found');
      return;
    }
    const agent = ownerOf(bearerToken(request.headers.authorization), this.config.agents);
    if (!agent) {
      this.refusedLog.warn({ remote: request.socket.remoteAddress }, 'agent token refused');
      this.refuse(socket, 401, 'Unauthorized', 'unauthorized');
      return;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => this.accept(ws, agent.name));
  }

  private refuse(socket: Duplex, status: number, text: string, reason: string): void {
    this.rejections.inc({ reason });
    const challenge = status === 401 ? 'WWW-Authenticate: Bearer realm="relay"\r\n' : '';
    socket.end(
      `HTTP/1.1 ${status} ${text}\r\n${challenge}Connection: close\r\nContent-Length: 0\r\n\r\n`,
    );
  }

  private accept(ws: WebSocket, agent: string): void {
    const connection = new AgentConnection(agent, ws, this.limits);
    const log = this.logger.child({ agent, connection: connection.id });
    let greeted = false;
    const helloTimer = setTimeout(() => drop('no hello frame in time'), HELLO_TIMEOUT_MS);
    // A pod that vanished without closing (a cut network, a frozen node) would hold its
    // sessions until each request timed out: no pong by the next ping ends it at once.
    let alive = true;
    ws.on('pong', () => (alive = true));
    const pinger = setInterval(() => {
      if (!alive) {
        this.rejections.inc({ reason: 'no_pong' });
        log.warn('agent connection did not answer a ping; dropping it');
        ws.terminate();
        return;
      }
      alive = false;
      ws.ping();
    }, this.config.agentPingMs);

    const drop = (reason: string, code = POLICY_VIOLATION) => {
      this.rejections.inc({ reason: greeted ? 'invalid_frame' : 'no_hello' });
      log.warn({ reason }, 'dropping agent connection');
      connection.close(code, reason);
    };

    ws.on('message', (data, isBinary) => {
      if (isBinary || !connection.open) return; // the protocol ignores binary frames
      const frame = parseAgentFrame(rawText(data), this.limits);
      switch (frame.kind) {
        case 'hello':
          connection.agentId = frame.agentId;
          connection.version = frame.version;
          if (greeted) return this.registry.setInventory(connection, frame.servers);
          greeted = true;
          clearTimeout(helloTimer);
          connection.servers = frame.servers;
          this.registry.add(connection);
          log.info({ agentId: frame.agentId, version: frame.version }, 'agent connected');
          return;
        case 'inventory':
          if (!greeted) return drop('inventory before hello');
          this.registry.setInventory(connection, frame.servers);
          return;
        case 'response':
          if (!greeted) return drop('rpc before hello');
          if (connection.settle(frame.server, frame.id, frame.message) === 'wrong-server') {
            this.misdirectedLog.warn(
              { agent, connection: connection.id, server: frame.server.slice(0, 64) },
              'dropping an answer from a server the request was not sent to',
            );
          }
          return;
        case 'notification':
          if (!greeted) return drop('rpc before hello');
          // Progress goes to the waiting request of that server it is about; the rest to
          // the registry's listeners (ServerMessageRouter decides which sessions hear it).
          if (!connection.deliver(frame.server, frame.message)) {
            this.registry.notification(connection, frame.server, frame.message);
          }
          return;
        case 'unknown':
          log.debug({ type: frame.type }, 'ignoring a frame of unknown type');
          return;
        case 'invalid':
          return drop(frame.reason, frame.tooBig ? MESSAGE_TOO_BIG : POLICY_VIOLATION);
      }
    });
    ws.on('error', (error) => log.warn({ reason: error.message }, 'agent connection error'));
    ws.on('close', (code) => {
      clearTimeout(helloTimer);
      clearInterval(pinger);
      connection.closedByPeer();
      if (greeted) {
        this.registry.remove(connection);
        log.info({ code }, 'agent disconnected');
      }
    });
  }
}

function rawText(data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
