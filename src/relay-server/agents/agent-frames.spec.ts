import { describe, expect, it } from 'vitest';
import { DEFAULT_FRAME_LIMITS } from '../../agent-protocol/frame-codec.js';
import { parseAgentFrame } from './agent-frames.js';

const parse = (text: string) => parseAgentFrame(text, DEFAULT_FRAME_LIMITS);

const server = { name: 'echo', state: 'up', tools: [{ name: 'echo', inputSchema: {} }] };

describe('parseAgentFrame', () => {
  it('reads hello, inventory, responses and notifications as docs/agent-protocol.md has them', () => {
    expect(
      parse(
        JSON.stringify({
          type: 'hello',
          agent: { id: 'pod-a', version: '1.0.0' },
          servers: [server],
        }),
      ),
    ).toEqual({ kind: 'hello', agentId: 'pod-a', version: '1.0.0', servers: [server] });
    expect(parse(JSON.stringify({ type: 'inventory', servers: [] }))).toEqual({
      kind: 'inventory',
      servers: [],
    });
    const result = { jsonrpc: '2.0', id: 7, result: { content: [] } };
    expect(parse(JSON.stringify({ type: 'rpc', server: 'echo', message: result }))).toEqual({
      kind: 'response',
      server: 'echo',
      id: 7,
      message: result,
    });
    const error = { jsonrpc: '2.0', id: 'x', error: { code: -32001, message: 'down' } };
    expect(parse(JSON.stringify({ type: 'rpc', server: 'echo', message: error }))).toMatchObject({
      kind: 'response',
      id: 'x',
    });
    const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: {} };
    expect(parse(JSON.stringify({ type: 'rpc', server: 'echo', message: progress }))).toEqual({
      kind: 'notification',
      server: 'echo',
      message: progress,
      client: undefined,
    });
    // From a client's own process of a per-client server: for that client only.
    const own = { type: 'rpc', server: 'echo', message: progress, client: { name: 'alice' } };
    expect(parse(JSON.stringify(own))).toMatchObject({ kind: 'notification', client: 'alice' });
  });

  it('ignores frame types it does not know, so agents can add some later', () => {
    expect(parse('{"type":"telemetry","x":1}')).toEqual({
      kind: 'unknown',
      type: 'telemetry',
    });
  });

  it.each([
    ['not JSON', '\u0000garbage', 'frame is not JSON'],
    ['an array', '[1,2]', 'frame is not a JSON object'],
    ['no type', '{"agent":1}', 'frame has no type'],
    ['a hello without agent', '{"type":"hello","servers":[]}', 'malformed hello frame'],
    [
      'a bad state',
      JSON.stringify({ type: 'inventory', servers: [{ ...server, state: 'crash-looping' }] }),
      'malformed inventory frame',
    ],
    [
      'too many servers',
      JSON.stringify({
        type: 'inventory',
        servers: Array.from({ length: 1001 }, (_, i) => ({ ...server, name: `s${i}` })),
      }),
      'malformed inventory frame',
    ],
    [
      'an rpc without server',
      '{"type":"rpc","message":{"jsonrpc":"2.0","id":1,"result":{}}}',
      'malformed rpc frame',
    ],
    [
      'an rpc message that is neither',
      '{"type":"rpc","server":"echo","message":{"jsonrpc":"2.0","id":1}}',
      'rpc message is neither a response nor a notification',
    ],
    [
      'a JSON-RPC 1.0 message',
      '{"type":"rpc","server":"echo","message":{"id":1,"result":{}}}',
      'malformed rpc frame',
    ],
  ])('calls %s invalid', (_case, text, reason) => {
    expect(parse(text)).toEqual({ kind: 'invalid', reason });
  });

  it('reports a frame nested past the depth limit or over the size limit as invalid, without throwing', () => {
    // Built as text: JSON.stringify itself overflows on 20,000 levels.
    const deep = (levels: number) =>
      `{"type":"rpc","server":"echo","message":{"jsonrpc":"2.0",` +
      `"method":"notifications/tools/list_changed","params":${'{"a":'.repeat(levels)}{}${'}'.repeat(levels)}}}`;
    expect(parse(deep(20_000))).toEqual({
      kind: 'invalid',
      reason: 'nested deeper than 100 levels',
    });
    // Precondition: the same frame within the limit (3 levels of frame and message) is read.
    expect(parse(deep(97))).toMatchObject({ kind: 'notification', server: 'echo' });
    expect(parse(deep(98))).toMatchObject({ kind: 'invalid' });
    const limits = { maxFrameBytes: 1024, maxDepth: 100 };
    expect(
      parseAgentFrame(
        JSON.stringify({ type: 'inventory', servers: [], pad: 'x'.repeat(2000) }),
        limits,
      ),
    ).toMatchObject({ kind: 'invalid', tooBig: true });
  });
});
