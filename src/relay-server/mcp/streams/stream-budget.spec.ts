import { describe, expect, it } from 'vitest';
import type { RelayConfig } from '../../config/relay-config.js';
import { StreamBudget } from './stream-budget.js';

const config = {
  maxFrameBytes: 100,
  maxStreamBufferBytesPerClient: 250,
  maxStreamBufferBytes: 400,
} as RelayConfig;

describe('StreamBudget', () => {
  it('refuses past a stream, a client or the relay, and takes bytes back', () => {
    const budget = new StreamBudget(config);
    // A message always fits an empty stream; a second one may not pass the frame limit.
    expect(budget.take('alice', 0, 100)).toBeUndefined();
    expect(budget.take('alice', 100, 1)).toBe('stream');
    expect(budget.take('alice', 0, 100)).toBeUndefined();
    expect(budget.take('alice', 0, 51)).toBe('client');
    expect(budget.take('bob', 0, 100)).toBeUndefined();
    expect(budget.take('bob', 0, 100)).toBeUndefined();
    expect(budget.take('carol', 0, 1)).toBe('relay');
    expect(budget.held).toBe(400);
    budget.release('alice', 200);
    expect(budget.heldBy('alice')).toBe(0);
    expect(budget.take('carol', 0, 100)).toBeUndefined();
    expect(budget.held).toBe(300);
  });

  it('counts answers past the budget, and says which budget is used up', () => {
    const budget = new StreamBudget(config);
    expect(budget.exhausted('alice')).toBeUndefined();
    budget.charge('alice', 300);
    expect(budget.exhausted('alice')).toBe('client');
    expect(budget.exhausted('bob')).toBeUndefined();
    budget.charge('bob', 100);
    expect(budget.exhausted('bob')).toBe('relay');
    budget.release('alice', 300);
    expect(budget.exhausted('alice')).toBeUndefined();
  });
});
