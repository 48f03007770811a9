import { randomUUID } from 'node:crypto';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { getToken } from '@willsoto/nestjs-prometheus';
import { Gauge } from 'prom-client';
import type { AgentConnection } from '../../agents/agent-connection.js';
import { RELAY_CONFIG, type RelayConfig } from '../../config/relay-config.js';
import type { Message } from '../../json-rpc/json-rpc.js';
import type { RelayTarget } from './relay-target.js';
import { encodeEvent } from '../streams/lazy-event-stream.js';
import type { ReplayBuffer } from '../streams/replay-buffer.js';

/** Pinned to the connection that initialized it, except on the aggregate endpoint (its own). */
export interface RelaySession {
  id: string;
  client: string;
  agent: string;
  pinned?: { server: string; connection: AgentConnection };
  /** Requests in flight by the client's id (as JSON); aborting one cancels it at the agent. */
  inFlight: Map<string, AbortController>;
  lastUsed: number;
  /** The client's `sampling`, `elicitation` and `roots` capabilities, from its initialize. */
  capabilities?: Record<string, unknown>;
  /** The client asked this session's server for logging (`logging/setLevel`). */
  wantsLogging?: boolean;
  /** The client's GET event stream; `send` takes an event encoded once for every stream. */
  stream?: { send: (event: Buffer) => void; end: () => void };
  /** What its event streams sent, for a client that resumes one (2025 clients' streams). */
  replay?: ReplayBuffer;
}

// Without Redis a session dies with its connection (the pod holds its state); with Redis it can
// move (SessionMover). Clients rarely DELETE, so idle ones end and a client's cap evicts its LRU.
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

  /** A session another replica held, taken over with its id; the one held here if any. */
  adopt(
    id: string,
    { client, agent, wantsLogging }: Pick<RelaySession, 'client' | 'agent' | 'wantsLogging'>,
    pinned?: RelaySession['pinned'],
  ): RelaySession {
    const held = this.sessions.get(id);
    if (held) return held;
    const session = this.create(client, agent, pinned, id);
    if (wantsLogging) session.wantsLogging = true;
    return session;
  }

  /** Called for each session that ends for good (not when it merely leaves this replica). */
  onEnd(listener: (id: string) => void): void {
    this.endListeners.push(listener);
  }

  /** A new session; a client at its cap loses its least recently used one, idle ones first. */
  create(
    client: string,
    agent: string,
    pinned?: RelaySession['pinned'],
    id: string = randomUUID(),
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

  /** Only for the client, agent and server it was made for (others: 404); a find is a use. */
  find({ sessionId: id, client, agent, server }: RelayTarget): RelaySession | undefined {
    const session = id === undefined ? undefined : this.sessions.get(id);
    if (!session || session.client !== client || session.agent !== agent) return undefined;
    if (session.pinned?.server !== server) return undefined;
    if (session.pinned && !session.pinned.connection.open) {
      this.drop(session.id);
      return undefined;
    }
    session.lastUsed = Date.now();
    this.sessions.delete(session.id);
    this.sessions.set(session.id, session);
    return session;
  }

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

  /** Lets the session go from this replica only: its record in Redis may move elsewhere. */
  drop(id: string): void {
    const session = this.sessions.get(id);
    this.sessions.delete(id);
    session?.stream?.end();
    session?.replay?.clear();
  }

  dropConnection(connection: AgentConnection): void {
    for (const [id, session] of this.sessions) {
      if (session.pinned?.connection === connection) this.drop(id);
    }
  }

  /** Ends every event stream (the relay is stopping): the drain would wait for them else. */
  endStreams(): void {
    for (const session of this.sessions.values()) session.stream?.end();
  }

  /** To `server`'s sessions on `connection`; `only`: that client's (logs: only if it asked). */
  broadcast(
    connection: AgentConnection,
    server: string,
    message: Message,
    only?: { client: string; logging: boolean },
  ): void {
    this.sendWhere(
      (s) =>
        s.pinned?.connection === connection &&
        s.pinned.server === server &&
        (!only || (s.client === only.client && (!only.logging || s.wantsLogging === true))),
      message,
    );
  }

  broadcastAggregate(agent: string, message: Message): void {
    this.sendWhere((s) => !s.pinned && s.agent === agent, message);
  }

  private sendWhere(to: (session: RelaySession) => boolean, message: Message): void {
    const event = encodeEvent(message);
    for (const session of this.sessions.values()) {
      // With no GET stream open, the one that was keeps what it misses for a resume.
      if (!to(session)) continue;
      if (session.stream) session.stream.send(event);
      else session.replay?.send(session.replay.listen, event);
    }
  }

  /** Ends sessions idle past the limit; a request in flight or an open event stream is use. */
  sweep(): void {
    const cutoff = Date.now() - this.config.sessionIdleMs;
    for (const [id, session] of this.sessions) {
      if (session.lastUsed < cutoff && session.inFlight.size === 0 && !session.stream) {
        this.delete(id);
      }
    }
  }

  countByAgent(agents: Iterable<string>): Map<string, number> {
    const counts = new Map([...agents].map((agent) => [agent, 0]));
    for (const { agent } of this.sessions.values()) counts.set(agent, (counts.get(agent) ?? 0) + 1);
    return counts;
  }
}

/** Counted when scraped, so no path that opens or ends a session keeps a gauge in step. */
export const sessionsGaugeProvider = {
  provide: getToken('relay_mcp_sessions'),
  inject: [SessionStore, RELAY_CONFIG],
  useFactory: (sessions: SessionStore, config: RelayConfig) =>
    new Gauge({
      name: 'relay_mcp_sessions',
      help: 'Open MCP client sessions (Mcp-Session-Id), by agent; 0 for a configured agent without one.',
      labelNames: ['agent'],
      collect() {
        this.reset();
        const agents = config.agents.map((agent) => agent.name);
        for (const [agent, count] of sessions.countByAgent(agents)) this.set({ agent }, count);
      },
    }),
};
