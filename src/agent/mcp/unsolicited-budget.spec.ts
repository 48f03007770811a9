import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { type UnsolicitedLimits, UnsolicitedBudget } from './unsolicited-budget.js';

function setup(limits: Partial<UnsolicitedLimits> = {}) {
  let now = 0;
  const unknown: unknown[] = [];
  const floods: string[] = [];
  const budget = new UnsolicitedBudget(
    { unknownAnswer: (id) => unknown.push(id), flood: (reason) => floods.push(reason) },
    { now: () => now, ...limits },
  );
  return { budget, unknown, floods, tick: (ms: number) => (now += ms) };
}

const request = (id: string | number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'ping' });
const answer = (id: string | number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: {} });
const note: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/message' };

describe('UnsolicitedBudget', () => {
  it('passes the answer to a request sent, once; drops a second one and unknown ids', () => {
    const { budget, unknown } = setup();
    budget.sent(request(1));
    expect(budget.received(answer('1'))).toBe(false); // 1 and "1" are different ids
    expect(budget.received(answer(1))).toBe(true);
    expect(budget.received(answer(1))).toBe(false);
    expect(unknown).toEqual(['1', 1]);
  });

  it('forgets a request once it is cancelled, and the oldest beyond the limit', () => {
    const { budget } = setup({ maxOutstanding: 2 });
    budget.sent(request('relay:1'));
    budget.sent({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'relay:1' },
    });
    expect(budget.received(answer('relay:1'))).toBe(false);
    for (const id of [2, 3, 4]) budget.sent(request(id));
    expect(budget.received(answer(2))).toBe(false);
    expect(budget.received(answer(4))).toBe(true);
  });

  it('lets notifications through at a normal rate and floods once over their budget', () => {
    const { budget, floods, tick } = setup({ notificationBudget: { burst: 10, ratePerSecond: 5 } });
    for (let i = 0; i < 100; i++) {
      expect(budget.received(note)).toBe(true);
      tick(250);
    }
    for (let i = 0; i < 100; i++) budget.received(note);
    expect(floods).toHaveLength(1);
    expect(budget.received(note)).toBe(false);
  });

  it('floods once over the budget for unknown answers', () => {
    const { budget, floods } = setup({ unknownAnswerBudget: { burst: 5, ratePerSecond: 1 } });
    for (let i = 0; i < 20; i++) budget.received(answer(`x${i}`));
    expect(floods).toEqual([
      'sent too many messages nobody asked for (0 notifications or requests, 6 answers to unknown ids)',
    ]);
  });
});
