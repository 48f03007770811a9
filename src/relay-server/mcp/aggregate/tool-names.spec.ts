import { describe, expect, it } from 'vitest';
import { canPrefix, MAX_TOOL_NAME_LENGTH, prefixedName, splitName } from './tool-names.js';

describe('aggregate tool names', () => {
  it.each([
    ['github', 'search_issues', 'github__search_issues'],
    ['my-server', 'resolve-library-id', 'my-server__resolve-library-id'],
    ['a.b', 'x.y', 'a.b__x.y'],
    ['_lead', 'tool', '_lead__tool'],
    ['s', '_tool', 's___tool'],
    ['s', 'tool__with__separators', 's__tool__with__separators'],
    ['s', '__', 's____'],
  ])('%s + %s → %s, and back', (server, tool, name) => {
    expect(prefixedName(server, tool)).toBe(name);
    expect(splitName(name)).toEqual({ server, tool });
  });

  it.each([
    ['a__b', 'contains the separator'],
    ['trailing_', 'ends in an underscore'],
    ['', 'is empty'],
  ])('leaves out a server whose name %#: %s', (server) => {
    expect(canPrefix(server)).toBe(false);
    expect(prefixedName(server, 'tool')).toBeUndefined();
  });

  it('never maps two (server, tool) pairs to one name', () => {
    const servers = ['a', 'a_', 'a_b', '_a', 'a-b', 'a.b', 'ab', 'a__b', '_', '__'];
    const tools = ['b', '_b', '__b', 'b_', 'b__', '_', '__', 'x__y', 'a'];
    const seen = new Map<string, string>();
    for (const server of servers) {
      for (const tool of tools) {
        const name = prefixedName(server, tool);
        if (name === undefined) continue;
        expect(seen.get(name), name).toBeUndefined();
        seen.set(name, `${server}/${tool}`);
        expect(splitName(name)).toEqual({ server, tool });
      }
    }
    expect(seen.size).toBeGreaterThan(30);
  });

  it(`leaves out a name over ${MAX_TOOL_NAME_LENGTH} characters, never cuts it`, () => {
    const server = 's'.repeat(64);
    expect(prefixedName(server, 't'.repeat(62))).toHaveLength(128);
    expect(prefixedName(server, 't'.repeat(63))).toBeUndefined();
  });

  it.each([
    ['plain', undefined],
    ['__tool', undefined],
    ['server__', undefined],
    ['a___b', { server: 'a', tool: '_b' }],
    ['a__b__c_', { server: 'a', tool: 'b__c_' }],
  ])('splits %s at the first separator', (name, expected) => {
    expect(splitName(name)).toEqual(expected);
  });
});
