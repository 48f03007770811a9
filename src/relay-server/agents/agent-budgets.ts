import type { RelayConfig } from '../config/relay-config.js';

/**
 * What one agent token may take of what every agent shares: connections from the upgrade on
 * (one that never says hello holds a socket too), inventories by the size of their frames.
 */
export class AgentBudgets {
  private readonly connections = new Map<string, number>();
  private readonly inventories = new Map<string, number>();

  constructor(private readonly limits: RelayConfig['agentBudgets']) {}

  openConnection(agent: string): boolean {
    const held = this.connections.get(agent) ?? 0;
    if (held >= this.limits.maxConnectionsPerAgent) return false;
    this.connections.set(agent, held + 1);
    return true;
  }

  closeConnection(agent: string): void {
    hold(this.connections, agent, (this.connections.get(agent) ?? 0) - 1);
  }

  /** One connection's inventory goes from `before` to `after` bytes; false if over budget. */
  replaceInventory(agent: string, before: number, after: number): boolean {
    const next = this.inventoryBytes(agent) - before + after;
    if (after > before && next > this.limits.maxInventoryBytesPerAgent) return false;
    hold(this.inventories, agent, next);
    return true;
  }

  inventoryBytes(agent: string): number {
    return this.inventories.get(agent) ?? 0;
  }
}

/** Sets what `agent` holds; one that holds nothing leaves the map. */
function hold(held: Map<string, number>, agent: string, amount: number): void {
  if (amount > 0) held.set(agent, amount);
  else held.delete(agent);
}
