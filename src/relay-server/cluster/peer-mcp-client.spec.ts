import { describe, expect, it } from 'vitest';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';
import { answerOf, withEnvelope } from './peer-mcp-client.service.js';

const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

const envelope = { [VERSION_KEY]: '2026-07-28', [CAPABILITIES_KEY]: {} };

describe('withEnvelope', () => {
  it('adds the 2026-07-28 envelope to _meta and keeps the rest', () => {
    const message = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'whoami', _meta: { progressToken: 'p' } },
    };
    expect(withEnvelope(message)).toEqual({
      ...message,
      params: { name: 'whoami', _meta: { progressToken: 'p', ...envelope } },
    });
    expect(withEnvelope({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).params).toEqual({
      _meta: envelope,
    });
  });
});

describe('answerOf', () => {
  it('takes the 2026 fields off a result', () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' },
    };
    expect(answerOf({ status: 200, body }, 'pears').result).toEqual({ tools: [] });
  });

  it('passes a JSON-RPC error on as it is', () => {
    const body = { jsonrpc: '2.0', id: 1, error: { code: -32005, message: 'too many' } };
    expect(answerOf({ status: 429, body }, 'pears').error).toEqual(body.error);
  });

  it.each([
    ['refused', { failed: 'refused' as const }, RelayErrorCode.ServerUnavailable],
    ['lost', { failed: 'lost' as const }, RelayErrorCode.ServerUnavailable],
    ['too large', { failed: 'too_large' as const }, RelayErrorCode.ServerUnavailable],
    ['timed out', { failed: 'timeout' as const }, RelayErrorCode.RequestTimeout],
    ['cancelled', { failed: 'aborted' as const }, -32800],
    ['not JSON', { status: 502, body: undefined }, RelayErrorCode.ServerUnavailable],
    ['a 404 page', { status: 404, body: { message: 'no such MCP endpoint' } }, -32001],
    ['a malformed error', { status: 200, body: { error: { code: 'x' } } }, -32001],
  ])('answers a peer that %s with an error', (_, reply, code) => {
    expect(answerOf(reply, 'pears').error?.code).toBe(code);
  });
});
