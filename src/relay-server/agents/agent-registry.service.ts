import { EventEmitter } from 'node:events';
import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Gauge } from 'prom-client';
import type { ProtocolServer } from '../../agent-protocol/relay-protocol.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import type { Message } from '../json-rpc/json-rpc.js';
import type { AgentConnection } from './agent-connection.js';

interface AgentEvents {
  /** A connection's inventory changed; `before` is the one it replaced (empty for a new one). */
  inventory: [connection: AgentConnection, before: readonly ProtocolServer[]];
  /** A greeted connection closed (the sessions pinned to it end). */
  disconnect: [connection: AgentConnection];
  /** A notification an MCP server sent about no particular request (list changes, logs). */
  notification: [connection: AgentConnection, server: string, message: Message, client?: string];
}

// Open, greeted connections per agent. Pods of one deployment share a token: each is its own entry
// with its own inventory, and requests spread over those with the wanted MCP server up.
@Injectable()
export class AgentRegistry extends EventEmitter<AgentEvents> {
  private readonly connections = new Map<string, Set<AgentConnection>>();
  private turn = 0;

  constructor(
    @Inject(RELAY_CONFIG) config: RelayConfig,
    @InjectMetric('relay_agent_connections') private readonly gauge: Gauge<'agent'>,
  ) {
    super();
    for (const agent of config.agents) {
      this.connections.set(agent.name, new Set());
      this.gauge.set({ agent: agent.name }, 0);
    }
  }

  /** A greeted connection (its inventory from `hello` already set): every server of it is new. */
  add(connection: AgentConnection): void {
    this.connections.get(connection.agent)?.add(connection);
    this.updateGauge(connection.agent);
    this.emit('inventory', connection, []);
  }

  setInventory(connection: AgentConnection, servers: ProtocolServer[]): void {
    const before = connection.servers;
    connection.servers = servers;
    this.emit('inventory', connection, before);
  }

  remove(connection: AgentConnection): void {
    this.connections.get(connection.agent)?.delete(connection);
    this.updateGauge(connection.agent);
    this.emit('disconnect', connection);
  }

  of(agent: string): AgentConnection[] {
    return [...(this.connections.get(agent) ?? [])];
  }

  all(): AgentConnection[] {
    return [...this.connections.values()].flatMap((set) => [...set]);
  }

  /** The open connections of `agent` with `server` up; with no server, all its open ones. */
  serving(agent: string, server?: string | null): AgentConnection[] {
    return this.of(agent).filter((c) => c.open && (server == null || c.serves(server)));
  }

  /** The servers up on some open connection of `agent`, in inventory order, each once. */
  serversUp(agent: string): string[] {
    const up = this.serving(agent).flatMap((c) =>
      c.servers.filter((s) => s.state === 'up').map((s) => s.name),
    );
    return [...new Set(up)];
  }

  /** One open connection of `agent` with `server` up, taken in turn; undefined when none. */
  pick(agent: string, server: string): AgentConnection | undefined {
    const candidates = this.serving(agent, server);
    if (candidates.length === 0) return undefined;
    this.turn = (this.turn + 1) % Number.MAX_SAFE_INTEGER;
    return candidates[this.turn % candidates.length];
  }

  private updateGauge(agent: string): void {
    this.gauge.set({ agent }, this.connections.get(agent)?.size ?? 0);
  }
}
