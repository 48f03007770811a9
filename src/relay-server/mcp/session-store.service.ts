import { randomUUID } from 'node:crypto';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { AgentConnection } from '../agents/agent-connection.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { encodeEvent } from './lazy-event-stream.js';

/**
 * One MCP session (`Mcp-Session-Id`). A session of `/mcp/<agent>/<server>` is pinned to the
 * agent connection that initialized it; a session of the agent's aggregate endpoint
 * (`/mcp/<agent>`) is the relay's own and picks a connection for each request.
 */
export interface RelaySession {
  id: string;
  client: string;
  agent: string;
  /** The MCP server and the agent connection of a per-server session; none when aggregate. */
  pinned?: { server: string; connection: AgentConnection };
  /**
   * Requests in flight, by the client's id (as JSON). Aborting one cancels it at the agent
   * (`notifications/cancelled` from the client, or the client hanging up).
   */
  inFlight: Map<string, AbortController>;
  lastUsed: number;
  /** The client's `sampling`, `elicitation` and `roots` capabilities, from its initialize. */
  capabilities?: Record<string, unknown>;
  /** The client asked this session's server for logging (`logging/setLevel`). */
  wantsLogging?: boolean;
  /**
   * The client's open GET event stream, for notifications about no request; `send` takes an
   * encoded event (encodeEvent), so a message for many streams is serialized once.
   */
  stream?: { send: (event: Buffer) => void; end: () => void };
}

/**
 * The sessions the relay handed out. A session lives on one agent connection because the MCP
 * session state (initialize, subscriptions) is that pod's; when the connection closes the
 * session is gone here, and the client's next request gets 404, which tells an MCP client to
 * start a new session (Streamable HTTP, 2025-11-25). With several replicas (RelayCluster) the
 * session's record outlives it, and a replica holding a connection of its agent takes it over.
 *
 * Bounded two ways, since clients often never send DELETE: a session idle (no request, none
 * in flight) for RELAY_SESSION_IDLE_SECONDS ends, and a client holding
 * RELAY_MAX_SESSIONS_PER_CLIENT sessions loses its least recently used one to a new one, so a
 * client that leaks sessions only ever hurts itself.
 */
@Injectable()
export class SessionStore implements OnModuleInit, OnModuleDestroy {
  /** Map order is use order: a session used is moved to the end. */
  private readonly sessions = new Map<string, RelaySession>();
  private readonly endListeners: ((id: string) => void)[] = [];
  private sweeper: NodeJS.Timeout | undefined;

  constructor(@Inject(RELAY_CONFIG) private readonly config: RelayConfig) {}

  onModuleInit(): void {
    const every = Math.min(60_000, Math.max(1000, this.config.sessionIdleMs / 2));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  /** A new session; without `pinned`, one of the agent's aggregate endpoint. */
  create(client: string, agent: string, pinned?: RelaySession['pinned']): RelaySession {
    return this.add(randomUUID(), client, agent, pinned);
  }

  /**
   * A session another replica held, taken over with its id (that replica went); the one held
   * here already when two requests took it over at once.
   */
  adopt(
    id: string,
    { client, agent, wantsLogging }: Pick<RelaySession, 'client' | 'agent' | 'wantsLogging'>,
    pinned?: RelaySession['pinned'],
  ): RelaySession {
    const held = this.sessions.get(id);
    if (held) return held;
    const session = this.add(id, client, agent, pinned);
    if (wantsLogging) session.wantsLogging = true;
    return session;
  }

  /** Called for each session that ends for good (not when it merely leaves this replica). */
  onEnd(listener: (id: string) => void): void {
    this.endListeners.push(listener);
  }

  private add(
    id: string,
    client: string,
    agent: string,
    pinned: RelaySession['pinned'] | undefined,
  ): RelaySession {
    const mine = [...this.sessions.values()].filter((s) => s.client === client);
    if (mine.length >= this.config.maxSessionsPerClient) {
      const oldest = mine.find((s) => s.inFlight.size === 0) ?? mine[0];
      if (oldest) this.delete(oldest.id);
    }
    const session: RelaySession = {
      id,
      client,
      agent,
      ...(pinned && { pinned }),
      inFlight: new Map(),
      lastUsed: Date.now(),
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /**
   * The session, only for the client, agent and server it was made for (`server` undefined:
   * the agent's aggregate endpoint): another client holding the id learns nothing (the same
   * 404 as an unknown id). Finding it counts as use.
   */
  find(
    id: string,
    client: string,
    agent: string,
    server: string | undefined,
  ): RelaySession | undefined {
    const session = this.sessions.get(id);
    if (!session || session.client !== client || session.agent !== agent) return undefined;
    if (session.pinned?.server !== server) return undefined;
    if (session.pinned && !session.pinned.connection.open) {
      this.drop(id);
      return undefined;
    }
    session.lastUsed = Date.now();
    this.sessions.delete(id);
    this.sessions.set(id, session);
    return session;
  }

  /** The session lives on this replica (whoever it belongs to). */
  holds(id: string): boolean {
    return this.sessions.has(id);
  }

  list(): RelaySession[] {
    return [...this.sessions.values()];
  }

  /** Ends the session for good (the client's DELETE, idle, pushed out by a newer one). */
  delete(id: string): void {
    if (!this.sessions.has(id)) return;
    this.drop(id);
    for (const listener of this.endListeners) listener(id);
  }

  /**
   * Lets the session go from this replica only: with several replicas its record stays in
   * Redis, and a replica with a connection of its agent may take it over.
   */
  drop(id: string): void {
    const session = this.sessions.get(id);
    this.sessions.delete(id);
    session?.stream?.end();
  }

  /** Drops every session of a closed connection (called when an agent pod disconnects). */
  dropConnection(connection: AgentConnection): void {
    for (const [id, session] of this.sessions) {
      if (session.pinned?.connection === connection) this.drop(id);
    }
  }

  /**
   * Ends every open event stream (the relay is stopping): a GET stream never ends on its own,
   * so the shutdown's drain would otherwise wait its whole grace period for it. Clients
   * reconnect to another instance, or after the restart.
   */
  endStreams(): void {
    for (const session of this.sessions.values()) session.stream?.end();
  }

  /** Sends a notification to every open stream of `server`'s sessions on `connection`. */
  broadcast(connection: AgentConnection, server: string, message: Record<string, unknown>): void {
    const event = encodeEvent(message);
    for (const session of this.sessions.values()) {
      if (session.pinned?.connection === connection && session.pinned.server === server) {
        session.stream?.send(event);
      }
    }
  }

  /**
   * Sends a notification to the open streams of `client`'s sessions of `server` on
   * `connection`; with `logging`, only of those that asked for logging.
   */
  sendToClient(
    connection: AgentConnection,
    server: string,
    client: string,
    message: Record<string, unknown>,
    logging: boolean,
  ): void {
    const event = encodeEvent(message);
    for (const session of this.sessions.values()) {
      const { pinned } = session;
      if (pinned?.connection !== connection || pinned.server !== server) continue;
      if (session.client !== client || (logging && !session.wantsLogging)) continue;
      session.stream?.send(event);
    }
  }

  /** Sends a notification to every open stream of `agent`'s aggregate sessions. */
  broadcastAggregate(agent: string, message: Record<string, unknown>): void {
    const event = encodeEvent(message);
    for (const session of this.sessions.values()) {
      if (!session.pinned && session.agent === agent) session.stream?.send(event);
    }
  }

  /**
   * Ends sessions idle longer than the limit. A request in flight or an open event stream
   * (a client listening for changes) is use.
   */
  sweep(): void {
    const cutoff = Date.now() - this.config.sessionIdleMs;
    for (const [id, session] of this.sessions) {
      if (session.lastUsed < cutoff && session.inFlight.size === 0 && !session.stream) {
        this.delete(id);
      }
    }
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Open sessions per agent, each of `agents` included (0 when it has none). */
  countByAgent(agents: Iterable<string>): Map<string, number> {
    const counts = new Map([...agents].map((agent) => [agent, 0]));
    for (const { agent } of this.sessions.values()) counts.set(agent, (counts.get(agent) ?? 0) + 1);
    return counts;
  }
}
