import type { RelayConfig } from '../config/relay-config.js';

interface Held {
  connections: number;
  inventoryBytes: number;
}

/**
 * What one agent token may take of what every agent shares: connections from the upgrade on
 * (one that never says hello holds a socket too), inventories by the size of their frames.
 */
export class AgentBudgets {
  private readonly held = new Map<string, Held>();

  constructor(private readonly limits: RelayConfig['agentBudgets']) {}

  openConnection(agent: string): boolean {
    const held = this.of(agent);
    if (held.connections >= this.limits.maxConnectionsPerAgent) return false;
    held.connections++;
    return true;
  }

  closeConnection(agent: string): void {
    this.of(agent).connections--;
    this.forgetIfEmpty(agent);
  }

  /** One connection's inventory goes from `before` to `after` bytes; false if over budget. */
  replaceInventory(agent: string, before: number, after: number): boolean {
    const held = this.of(agent);
    const next = held.inventoryBytes - before + after;
    if (after > before && next > this.limits.maxInventoryBytesPerAgent) return false;
    held.inventoryBytes = next;
    this.forgetIfEmpty(agent);
    return true;
  }

  inventoryBytes(agent: string): number {
    return this.held.get(agent)?.inventoryBytes ?? 0;
  }

  private of(agent: string): Held {
    const held = this.held.get(agent) ?? { connections: 0, inventoryBytes: 0 };
    this.held.set(agent, held);
    return held;
  }

  private forgetIfEmpty(agent: string): void {
    const held = this.held.get(agent);
    if (held && held.connections <= 0 && held.inventoryBytes <= 0) this.held.delete(agent);
  }
}
