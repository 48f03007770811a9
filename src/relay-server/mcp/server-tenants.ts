import { Injectable } from '@nestjs/common';
import type { AgentConnection } from '../agents/agent-connection.js';

/**
 * Which clients each MCP server has served, per agent connection: a message that names no
 * request may be about any of them (docs/relay-server.md, Security). Lives as the connection.
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
