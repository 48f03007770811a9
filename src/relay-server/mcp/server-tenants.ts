import { Injectable } from '@nestjs/common';
import type { AgentConnection } from '../agents/agent-connection.js';

/**
 * Which clients each MCP server has served, per agent connection: every request and
 * notification the relay passes to a server counts, from any endpoint and either MCP revision.
 * A server's message that names no request (logging, mostly) may be about any of them, so the
 * relay gives it to a client only while that client is the server's one client
 * (docs/relay-server.md, Security). Entries live as long as the connection.
 */
@Injectable()
export class ServerTenants {
  private readonly byConnection = new WeakMap<AgentConnection, Map<string, Set<string>>>();

  record(connection: AgentConnection, server: string, client: string): void {
    let servers = this.byConnection.get(connection);
    if (!servers) {
      servers = new Map();
      this.byConnection.set(connection, servers);
    }
    const clients = servers.get(server) ?? new Set<string>();
    clients.add(client);
    servers.set(server, clients);
  }

  /** The one client `server` on `connection` has served; undefined for none or several. */
  soleClient(connection: AgentConnection, server: string): string | undefined {
    const clients = this.byConnection.get(connection)?.get(server);
    if (clients?.size !== 1) return undefined;
    return clients.values().next().value;
  }
}
