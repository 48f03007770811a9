import { describe, expect, it } from 'vitest';
import {
  discoverAnswer,
  isStateless,
  refusal,
  toStatelessAnswer,
  withoutEnvelope,
} from './stateless-wire.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const call = (meta: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'hi' }, _meta: meta },
});

describe('stateless-wire', () => {
  it('tells a 2026 message by its envelope or header, and a 2025 one by neither', () => {
    expect(isStateless(call(ENVELOPE), '2026-07-28')).toBe(true);
    expect(isStateless(call(ENVELOPE), undefined)).toBe(true);
    expect(isStateless({ jsonrpc: '2.0', method: 'notifications/x' }, '2026-07-28')).toBe(true);
    expect(isStateless(call({ progressToken: 1 }), '2025-11-25')).toBe(false);
    expect(
      isStateless({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, undefined),
    ).toBe(false);
  });

  it('strips the envelope and keeps progressToken and other _meta', () => {
    expect(withoutEnvelope(call({ ...ENVELOPE, progressToken: 7, traceparent: 't' }))).toEqual(
      call({ progressToken: 7, traceparent: 't' }),
    );
    const bare = withoutEnvelope(call(ENVELOPE)) as { params: Record<string, unknown> };
    expect(bare.params).toEqual({ name: 'echo', arguments: { text: 'hi' } });
  });

  /** The standard headers a well-behaved client sends with `message`. */
  const headersOf = (message: Record<string, unknown>) => ({
    protocolVersion: '2026-07-28',
    method: String(message.method),
    name: 'echo',
  });

  it('refuses another version (-32022 with what is supported) and mismatched headers (-32020)', () => {
    const other = call({ ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2027-01-01' });
    expect(refusal(other, { ...headersOf(other), protocolVersion: '2027-01-01' })).toMatchObject({
      id: 1,
      error: { code: -32022, data: { supported: ['2026-07-28'], requested: '2027-01-01' } },
    });
    const request = call(ENVELOPE);
    expect(refusal(request, { ...headersOf(request), method: 'tools/list' })).toMatchObject({
      error: { code: -32020 },
    });
    expect(refusal(call({}), headersOf(request))).toMatchObject({ error: { code: -32602 } });
    expect(refusal(request, headersOf(request))).toBeUndefined();
  });

  type Case = [string, Record<string, unknown>, Record<string, string>, number];
  it.each<Case>([
    [
      'no clientCapabilities',
      call({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28' }),
      {},
      -32602,
    ],
    [
      'a header that differs from an unsupported body version',
      call({ ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' }),
      headersOf(call(ENVELOPE)),
      -32020,
    ],
    ['no standard headers', call(ENVELOPE), {}, -32020],
    ...[
      'initialize',
      'ping',
      'logging/setLevel',
      'resources/subscribe',
      'resources/unsubscribe',
    ].map((method): Case => {
      const removed = { ...call(ENVELOPE), method };
      return [`the removed ${method}`, removed, headersOf(removed), -32601];
    }),
  ])('refuses %s', (_case, message, headers, code) => {
    expect(refusal(message, headers)?.error?.code).toBe(code);
  });

  it('gives results resultType, and the cacheable ones ttlMs and cacheScope', () => {
    const list = toStatelessAnswer(
      { method: 'tools/list' },
      {
        jsonrpc: '2.0',
        id: 1,
        result: { tools: [] },
      },
    );
    expect(list.result).toEqual({
      resultType: 'complete',
      tools: [],
      ttlMs: 0,
      cacheScope: 'private',
    });
    const called = toStatelessAnswer(
      { method: 'tools/call' },
      {
        jsonrpc: '2.0',
        id: 2,
        result: { content: [] },
      },
    );
    expect(called.result).toEqual({ resultType: 'complete', content: [] });
    const read = { method: 'resources/read', params: { uri: 'file:///x' } };
    const missing = toStatelessAnswer(read, {
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32002, message: 'no such resource' },
    });
    expect(missing.error).toEqual({
      code: -32602,
      message: 'no such resource',
      data: { uri: 'file:///x' },
    });
    const invalid = toStatelessAnswer(read, {
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32602, message: 'Resource file:///x not found' },
    });
    expect(invalid.error?.data).toEqual({ uri: 'file:///x' });
  });

  it('answers server/discover from an initialize result, without 2025-only capabilities, with tools listChanged (the relay follows the inventory)', () => {
    const answer = discoverAnswer('probe', {
      jsonrpc: '2.0',
      id: 'x',
      result: {
        protocolVersion: '2025-11-25',
        capabilities: {
          tools: {},
          resources: { subscribe: true, listChanged: false },
          logging: {},
          tasks: {},
        },
        serverInfo: { name: 'echo', version: '1.0.0' },
        instructions: 'be kind',
      },
    });
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 'probe',
      result: {
        resultType: 'complete',
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: { listChanged: true }, resources: { listChanged: false } },
        instructions: 'be kind',
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'echo', version: '1.0.0' } },
      },
    });
    const failed = { jsonrpc: '2.0' as const, id: 'x', error: { code: -32001, message: 'down' } };
    expect(discoverAnswer('probe', failed)).toEqual({ ...failed, id: 'probe' });
  });
});
