import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { AgentConnection } from '../agents/agent-connection.js';

/** One MCP session (`Mcp-Session-Id`), pinned to the agent connection that initialized it. */
export interface RelaySession {
  id: string;
  client: string;
  agent: string;
  server: string;
  connection: AgentConnection;
  /** Client request id (as JSON) → the relay id on the connection, for cancellation. */
  inFlight: Map<string, number>;
}

/**
 * The sessions the relay handed out. A session lives on one agent connection because the MCP
 * session state (initialize, subscriptions) is that pod's; when the connection closes the
 * session is gone, and the client's next request gets 404, which tells an MCP client to start
 * a new session (Streamable HTTP, 2025-11-25).
 */
@Injectable()
export class SessionStore {
  private readonly sessions = new Map<string, RelaySession>();

  create(client: string, agent: string, server: string, connection: AgentConnection): RelaySession {
    const session: RelaySession = {
      id: randomUUID(),
      client,
      agent,
      server,
      connection,
      inFlight: new Map(),
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /**
   * The session, only for the client, agent and server it was made for: another client
   * holding the id learns nothing (the same 404 as an unknown id).
   */
  find(id: string, client: string, agent: string, server: string): RelaySession | undefined {
    const session = this.sessions.get(id);
    if (!session || session.client !== client || session.agent !== agent) return undefined;
    if (session.server !== server) return undefined;
    if (!session.connection.open) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  delete(id: string): void {
    this.sessions.delete(id);
  }

  /** Drops every session of a closed connection (called when an agent pod disconnects). */
  dropConnection(connection: AgentConnection): void {
    for (const [id, session] of this.sessions) {
      if (session.connection === connection) this.sessions.delete(id);
    }
  }

  get size(): number {
    return this.sessions.size;
  }
}
