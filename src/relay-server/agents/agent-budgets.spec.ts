import { describe, expect, it } from 'vitest';
import { AgentBudgets } from './agent-budgets.js';

describe('AgentBudgets', () => {
  const limits = { maxConnectionsPerAgent: 2, maxInventoryBytesPerAgent: 100 };

  it('holds the inventory bytes of all connections of an agent to its budget', () => {
    const budgets = new AgentBudgets(limits);
    expect(budgets.replaceInventory('shop', 0, 60)).toBe(true);
    expect(budgets.replaceInventory('shop', 0, 50)).toBe(false);
    expect(budgets.inventoryBytes('shop')).toBe(60);
    // A connection replacing its own inventory counts only the difference.
    expect(budgets.replaceInventory('shop', 60, 100)).toBe(true);
    // Shrinking is always allowed, and frees room.
    expect(budgets.replaceInventory('shop', 100, 0)).toBe(true);
    expect(budgets.replaceInventory('lab', 0, 100)).toBe(true);
    expect(budgets.inventoryBytes('shop')).toBe(0);
  });
});
