import { describe, expect, it } from 'vitest';
import type { ProtocolServer } from '../../../agent-protocol/relay-protocol.js';
import { changedServers } from './inventory-changes.js';

const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });
const up = (name: string, ...tools: string[]): ProtocolServer => ({
  name,
  state: 'up',
  tools: tools.map(tool),
});
const down = (name: string): ProtocolServer => ({ name, state: 'down', tools: [tool('a')] });
const starting = (name: string): ProtocolServer => ({ name, state: 'starting', tools: [] });

describe('changedServers', () => {
  it.each<[string, ProtocolServer[], ProtocolServer[], string[]]>([
    ['nothing changed', [up('a', 'x')], [up('a', 'x')], []],
    ['a server added (up)', [up('a', 'x')], [up('a', 'x'), up('b', 'y')], ['b']],
    ['a server added (still starting)', [up('a', 'x')], [up('a', 'x'), starting('b')], []],
    ['a server removed', [up('a', 'x'), up('b', 'y')], [up('a', 'x')], ['b']],
    ['a server went down', [up('a', 'x')], [down('a')], ['a']],
    ['a server came up', [starting('a')], [up('a', 'x')], ['a']],
    ['starting to down', [starting('a')], [down('a')], []],
    ['a tool added', [up('a', 'x')], [up('a', 'x', 'z')], ['a']],
    ['the tools reordered', [up('a', 'x', 'z')], [up('a', 'z', 'x')], ['a']],
    ['a new connection', [], [up('a', 'x'), up('b')], ['a', 'b']],
  ])('%s', (_case, before, after, expected) => {
    expect(changedServers(before, after).sort()).toEqual(expected);
  });
});
