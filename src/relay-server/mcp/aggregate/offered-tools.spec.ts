import { describe, expect, it } from 'vitest';
import type { ProtocolServer } from '../../../agent-protocol/relay-protocol.js';
import { offeredDigest } from './offered-tools.js';

const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });
const pod = (servers: ProtocolServer[], open = true) => ({ open, servers });
const up = (name: string, ...tools: string[]): ProtocolServer => ({
  name,
  state: 'up',
  tools: tools.map(tool),
});

describe('offeredDigest', () => {
  const one = offeredDigest([pod([up('a', 'x'), up('b', 'y')])]);

  it.each([
    ['a second pod offering the same', [pod([up('a', 'x'), up('b', 'y')]), pod([up('b', 'y')])]],
    ['another order of servers', [pod([up('b', 'y'), up('a', 'x')])]],
    ['servers not up', [pod([up('a', 'x'), up('b', 'y'), { ...up('c', 'z'), state: 'down' }])]],
    ['a closed pod', [pod([up('a', 'x'), up('b', 'y')]), pod([up('c', 'z')], false)]],
  ])('is the same with %s', (_case, pods) => {
    expect(offeredDigest(pods)).toBe(one);
  });

  it.each([
    ['a server more', [pod([up('a', 'x'), up('b', 'y'), up('c')])]],
    ['a server less', [pod([up('a', 'x')])]],
    ['another tool', [pod([up('a', 'x'), up('b', 'z')])]],
    ['a pod listing other tools', [pod([up('a', 'x'), up('b', 'y')]), pod([up('b', 'y2')])]],
    ['no pods', []],
  ])('differs with %s', (_case, pods) => {
    expect(offeredDigest(pods)).not.toBe(one);
  });
});
