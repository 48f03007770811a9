/** What one agent (all its pods together) may hold at the relay. */
export interface AgentBudgetLimits {
  /** WebSocket connections open at once, greeted or not. */
  maxConnectionsPerAgent: number;
  /** Bytes of the last hello/inventory frame of each connection, summed over the agent's. */
  maxInventoryBytesPerAgent: number;
}

interface Held {
  connections: number;
  inventoryBytes: number;
}

/**
 * The per-agent budgets: one agent token must not be able to take what every agent shares.
 * Connections are counted from the upgrade on (a connection that never says hello holds a
 * socket too); inventories by the size of the frame that carried them, which is what their
 * parsed copy kept in memory grows with.
 */
export class AgentBudgets {
  private readonly held = new Map<string, Held>();

  constructor(private readonly limits: AgentBudgetLimits) {}

  /** Takes a connection slot for `agent`; false when it holds its maximum already. */
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

  /**
   * One connection's inventory changes from `before` to `after` bytes; false (and nothing
   * changed) when the agent would hold more than its budget.
   */
  replaceInventory(agent: string, before: number, after: number): boolean {
    const held = this.of(agent);
    const next = held.inventoryBytes - before + after;
    if (after > before && next > this.limits.maxInventoryBytesPerAgent) return false;
    held.inventoryBytes = next;
    this.forgetIfEmpty(agent);
    return true;
  }

  /** Bytes of inventory the agent holds now (for tests and logs). */
  inventoryBytes(agent: string): number {
    return this.held.get(agent)?.inventoryBytes ?? 0;
  }

  private of(agent: string): Held {
    let held = this.held.get(agent);
    if (!held) {
      held = { connections: 0, inventoryBytes: 0 };
      this.held.set(agent, held);
    }
    return held;
  }

  private forgetIfEmpty(agent: string): void {
    const held = this.held.get(agent);
    if (held && held.connections <= 0 && held.inventoryBytes <= 0) this.held.delete(agent);
  }
}
