import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import type { AgentConnection } from '../agents/agent-connection.js';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import { SessionStore } from './session-store.service.js';

/** Notifications about the server itself: the same for every client, so every session hears them. */
const ABOUT_THE_SERVER = new Set([
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
]);

/**
 * Where a server's notification about no waiting request goes: list changes to every session of
 * that server on that connection; anything else may carry one client's data, so only to the
 * server's one client (logging, to its sessions that asked), dropped while it served several.
 */
@Injectable()
export class ServerMessageRouter {
  constructor(
    registry: AgentRegistry,
    private readonly sessions: SessionStore,
    @InjectMetric('relay_server_notifications_dropped_total')
    private readonly dropped: Counter<'agent' | 'reason'>,
  ) {
    registry.on('notification', (connection, server, message, client) =>
      this.route(connection, server, message, client),
    );
  }

  /** `from`: the client whose own process of the server sent it (a per-client server). */
  route(
    connection: AgentConnection,
    server: string,
    message: Record<string, unknown>,
    from?: string,
  ): void {
    const method = String(message.method);
    if (ABOUT_THE_SERVER.has(method)) {
      this.sessions.broadcast(connection, server, message);
      return;
    }
    const agent = connection.agent;
    if (method === 'notifications/progress') {
      this.dropped.inc({ agent, reason: 'no_request' });
      return;
    }
    const client = from ?? connection.soleClient(server);
    if (client === undefined) {
      this.dropped.inc({ agent, reason: 'unattributed' });
      return;
    }
    const logging = method === 'notifications/message';
    this.sessions.sendToClient(connection, server, client, message, logging);
  }
}
