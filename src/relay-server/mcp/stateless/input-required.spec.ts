import { describe, expect, it } from 'vitest';
import { type HeldCall, HeldCalls, heldBy } from './input-required.js';

/** A call whose server asked its client one thing, and never answers. */
function askingCall(): HeldCall {
  return {
    client: 'alice',
    request: 'tools/call ask',
    answer: new Promise(() => {}),
    asked: new Map([['input-1', { jsonrpc: '2.0', id: 7, method: 'roots/list' }]]),
    pool: {},
    reply: () => {},
    cancel: new AbortController(),
    keys: 1,
  };
}

async function stateOf(held: HeldCalls, call: HeldCall): Promise<string> {
  const answer = await held.next(call, 1, new AbortController().signal);
  return (answer.result as { requestState: string }).requestState;
}

describe('MRTR request states', () => {
  it("start with this replica's tag, which placement reads back", async () => {
    const held = new HeldCalls(() => 'AbC-_12');
    const call = askingCall();
    const state = await stateOf(held, call);
    expect(state).toMatch(/^AbC-_12\.[\w-]{24}$/);
    expect(heldBy({ params: { requestState: state } })).toBe('AbC-_12');
    expect(held.take(state, 'alice', call.request)).toBe(call);
  });

  it('are the random part alone without replicas', async () => {
    const held = new HeldCalls();
    const state = await stateOf(held, askingCall());
    expect(state).toMatch(/^[\w-]{24}$/);
    expect(heldBy({ params: { requestState: state } })).toBeUndefined();
  });

  it.each([
    ['no state', { params: {} }],
    ['a state not a string', { params: { requestState: 7 } }],
    ['an empty tag', { params: { requestState: '.abc' } }],
    ['no params', {}],
  ])('name no replica for %s', (_case, message) => {
    expect(heldBy(message)).toBeUndefined();
  });
});
