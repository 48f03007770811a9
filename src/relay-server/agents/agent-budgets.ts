import type { RelayConfig } from '../config/relay-config.js';

/** What one agent token may take of shared memory: inventory bytes (the gateway counts sockets). */
export class AgentBudgets {
  private readonly inventories = new Map<string, number>();

  constructor(private readonly limits: RelayConfig['agentBudgets']) {}

  /** One connection's inventory goes from `before` to `after` bytes; false if over budget. */
  replaceInventory(agent: string, before: number, after: number): boolean {
    const next = this.inventoryBytes(agent) - before + after;
    if (after > before && next > this.limits.maxInventoryBytesPerAgent) return false;
    // An agent that holds nothing leaves the map.
    if (next > 0) this.inventories.set(agent, next);
    else this.inventories.delete(agent);
    return true;
  }

  inventoryBytes(agent: string): number {
    return this.inventories.get(agent) ?? 0;
  }
}
