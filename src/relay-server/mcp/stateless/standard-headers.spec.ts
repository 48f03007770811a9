import { describe, expect, it } from 'vitest';
import { headerMismatch, nameHeader, type StandardHeaders } from './standard-headers.js';

const VERSION = '2026-07-28';
const call = (name: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });
const read = { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'file:///a b' } };
const list = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
const base64 = (text: string) => `=?base64?${Buffer.from(text).toString('base64')}?=`;
const full = (method: string, name?: string): StandardHeaders => ({
  protocolVersion: VERSION,
  method,
  ...(name !== undefined && { name }),
});

describe('standard headers', () => {
  type Case = [string, Record<string, unknown>, StandardHeaders, string | undefined];
  it.each<Case>([
    ['all three, matching', call('echo'), full('tools/call', 'echo'), undefined],
    ['no Mcp-Name where none applies', list, full('tools/list'), undefined],
    ['a Base64 name', call('héllo'), full('tools/call', base64('héllo')), undefined],
    ['a URI as the name', read, full('resources/read', 'file:///a b'), undefined],
    ['no MCP-Protocol-Version', list, { method: 'tools/list' }, 'MCP-Protocol-Version'],
    [
      'another version',
      list,
      { ...full('tools/list'), protocolVersion: 'x' },
      'MCP-Protocol-Version',
    ],
    ['no Mcp-Method', list, { protocolVersion: VERSION }, 'Mcp-Method'],
    ['another method', list, full('prompts/list'), 'Mcp-Method'],
    ['a method in other case', list, full('TOOLS/LIST'), 'Mcp-Method'],
    ['no Mcp-Name', call('echo'), full('tools/call'), 'Mcp-Name'],
    ['another name', call('echo'), full('tools/call', 'wrong'), 'Mcp-Name'],
    ['Base64 of another name', call('echo'), full('tools/call', base64('wrong')), 'Mcp-Name'],
    ['Base64 that is not', call('echo'), full('tools/call', '=?base64?e*ho?='), 'Mcp-Name'],
    ['Base64 that is not UTF-8', call('echo'), full('tools/call', '=?base64?/w==?='), 'Mcp-Name'],
  ])('%s', (_case, message, headers, blamed) => {
    const why = headerMismatch(message, headers, VERSION);
    if (blamed === undefined) expect(why).toBeUndefined();
    else expect(why).toContain(blamed);
  });

  it('encodes a name as a header value: as it is when plain ASCII, else Base64', () => {
    expect(nameHeader(call('get-sum'))).toBe('get-sum');
    expect(nameHeader(read)).toBe('file:///a b');
    for (const name of ['héllo', ' padded ', 'a\nb', '=?base64?literal?=']) {
      const encoded = nameHeader(call(name));
      expect(encoded).toBe(base64(name));
      expect(headerMismatch(call(name), full('tools/call', encoded), VERSION)).toBeUndefined();
    }
    expect(nameHeader(list)).toBeUndefined();
  });
});
