import { describe, expect, it } from 'vitest';
import { parseServerFrame, relayUrl, toProtocolServers } from './relay-protocol.js';

describe('relayUrl', () => {
  it.each([
    ['https://relay.example.com', 'wss://relay.example.com/agent/v1/connect'],
    ['https://relay.example.com/', 'wss://relay.example.com/agent/v1/connect'],
    ['https://relay.example.com:8443/base/', 'wss://relay.example.com:8443/base/agent/v1/connect'],
    ['https://relay.example.com/base#frag', 'wss://relay.example.com/base/agent/v1/connect'],
  ])('%s → %s', (input, expected) => {
    expect(relayUrl(new URL(input)).href).toBe(expected);
  });
});

describe('parseServerFrame', () => {
  const frame = (message: unknown, extra: object = {}) =>
    JSON.stringify({ type: 'rpc', server: 'echo', message, ...extra });

  it('reads requests and notifications', () => {
    expect(parseServerFrame(frame({ jsonrpc: '2.0', id: 1, method: 'tools/list' }))).toEqual({
      kind: 'request',
      server: 'echo',
      message: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(
      parseServerFrame(frame({ jsonrpc: '2.0', method: 'notifications/initialized' })),
    ).toMatchObject({
      kind: 'notification',
    });
  });

  it('flags a malformed message that has an id, so it can be answered', () => {
    expect(
      parseServerFrame(frame({ jsonrpc: '1.0', id: 'x', method: 'tools/list' })),
    ).toMatchObject({
      kind: 'invalid-request',
      id: 'x',
    });
  });

  it.each([
    ['not json', 'not JSON'],
    [JSON.stringify({ type: 'hello' }), 'unknown frame type "hello"'],
    [JSON.stringify({ type: 'rpc', message: {} }), 'rpc frame without server or message'],
    [frame({ jsonrpc: '2.0', result: {} }), 'not a JSON-RPC 2.0 request or notification'],
    // Reporting the type once threw RangeError (JSON.stringify of a 10,000-deep value).
    [`{"type":${'['.repeat(10_000)}${']'.repeat(10_000)}}`, 'nested deeper than 100 levels'],
    [`{"type":${'['.repeat(50)}${']'.repeat(50)}}`, 'unknown frame type <array>'],
    [`"${'x'.repeat(4 * 1024 * 1024)}"`, 'over the 4194304-byte frame limit'],
  ])('ignores frame case %#', (text, reason) => {
    const parsed = parseServerFrame(text);
    expect(parsed.kind).toBe('ignored');
    expect(parsed).toMatchObject({ reason: expect.stringContaining(reason) as unknown });
  });

  it('answers a request nested too deep with -32004, by its id', () => {
    const deep = `{"type":"rpc","server":"echo","message":{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"x":${'['.repeat(6_000)}${']'.repeat(6_000)}}}}`;
    expect(parseServerFrame(deep)).toEqual({
      kind: 'invalid-request',
      server: 'echo',
      id: 5,
      code: -32004,
      reason: 'message rejected: nested deeper than 100 levels',
    });
  });
});

describe('toProtocolServers', () => {
  it('shows crash-looping as down', () => {
    expect(
      toProtocolServers([
        { name: 'a', state: 'crash-looping', tools: [] },
        { name: 'b', state: 'up', tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
      ]),
    ).toEqual([
      { name: 'a', state: 'down', tools: [] },
      { name: 'b', state: 'up', tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
    ]);
  });

  it('leaves out a tool whose schema nests too deep for a frame', () => {
    let schema: unknown = {};
    for (let i = 0; i < 6_000; i++) schema = { items: schema };
    const tools = [
      { name: 'deep', inputSchema: schema },
      { name: 'fine', inputSchema: { type: 'object' } },
    ];
    expect(toProtocolServers([{ name: 'a', state: 'up', tools }])[0]?.tools).toEqual([tools[1]]);
  });
});
