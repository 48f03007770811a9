import { Inject, Injectable } from '@nestjs/common';
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/client';
import { AgentRegistry } from '../../agents/agent-registry.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../../config/relay-config.js';
import { changedServers, LIST_CHANGED } from '../sessions/inventory-changes.js';
import type { RelayTarget } from '../sessions/relay-target.js';
import { type JsonRpcId, type Message } from '../../json-rpc/json-rpc.js';

/** The lists whose changes a listen can ask for, by the name of its flag. */
const LIST_FLAGS = {
  toolsListChanged: 'tools',
  promptsListChanged: 'prompts',
  resourcesListChanged: 'resources',
} as const;
export type ListKind = (typeof LIST_FLAGS)[keyof typeof LIST_FLAGS];

/** The lists a `subscriptions/listen` request asked to follow (`params.notifications`). */
export function listsAsked(params: unknown): ListKind[] {
  const asked = (params as { notifications?: Partial<Record<string, unknown>> } | null)
    ?.notifications;
  return Object.entries(LIST_FLAGS)
    .filter(([flag]) => asked?.[flag] === true)
    .map(([, kind]) => kind);
}

interface Listener extends Pick<RelayTarget, 'client' | 'agent' | 'server'> {
  /** The lists it asked to follow: it hears of no other. */
  lists: ListKind[];
  id: JsonRpcId;
  send: (message: Message) => void;
  end: () => void;
}

/** A server that comes, goes or restarts may have changed any of its lists. */
const EVERY_LIST: readonly ListKind[] = Object.values(LIST_FLAGS);

/** 2026's `subscriptions/listen` streams (no session); each holds a request: capped per client. */
@Injectable()
export class ListenStore {
  private readonly listeners = new Set<Listener>();

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    registry: AgentRegistry,
  ) {
    registry.on('notification', (connection, server, message) => {
      const list = LIST_CHANGED.exec(String(message.method))?.[1] as ListKind | undefined;
      if (list) this.changed(connection.agent, [server], [list]);
    });
    registry.on('inventory', (connection, before) => {
      this.changed(connection.agent, changedServers(before, connection.servers), EVERY_LIST);
    });
    registry.on('disconnect', (connection) => {
      this.changed(connection.agent, changedServers(connection.servers, []), EVERY_LIST);
    });
  }

  add(listener: Listener): (() => void) | undefined {
    let mine = 0;
    for (const other of this.listeners) if (other.client === listener.client) mine++;
    if (mine >= this.config.maxSessionsPerClient) return undefined;
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Ends every listen stream (the relay is stopping): they never end on their own. */
  endAll(): void {
    for (const listener of [...this.listeners]) listener.end();
  }

  private changed(agent: string, servers: string[], lists: readonly ListKind[]): void {
    if (servers.length === 0) return;
    for (const listener of this.listeners) {
      if (listener.agent !== agent) continue;
      if (listener.server !== undefined && !servers.includes(listener.server)) continue;
      for (const list of lists.filter((kind) => listener.lists.includes(kind))) {
        listener.send({
          jsonrpc: '2.0',
          method: `notifications/${list}/list_changed`,
          params: { _meta: { [SUBSCRIPTION_ID_META_KEY]: listener.id } },
        });
      }
    }
  }
}
