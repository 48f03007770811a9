import type { JSONRPCRequest, JSONRPCResponse } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RpcFrame } from '../../agent-protocol/relay-protocol.js';
import { ClientRequests, type InFlightRequest, withMissing } from './client-requests.js';

const capable = (session: string) => ({ session, capabilities: { sampling: {}, roots: {} } });
const ask = (id: number, method = 'sampling/createMessage'): JSONRPCRequest => ({
  jsonrpc: '2.0',
  id,
  method,
  params: {},
});

describe('ClientRequests', () => {
  let inFlight: InFlightRequest[];
  let sent: RpcFrame<JSONRPCRequest>[];
  let toChild: JSONRPCResponse[];
  let requests: ClientRequests;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    inFlight = [];
    sent = [];
    toChild = [];
    requests = new ClientRequests({
      inFlight: () => inFlight,
      send: (frame) => (sent.push(frame), { sent: true }),
      toChild: (_child, message) => toChild.push(message),
      timeoutMs: 60_000,
      maxHeld: 10,
      warn: () => {},
    });
  });
  afterEach(() => {
    requests.close();
    vi.useRealTimers();
  });

  it("sends a call's burst of requests to it while another session's call waits", () => {
    inFlight = [{ remoteId: 'a', client: capable('A') }];
    requests.ask('srv', ask(1));
    inFlight.push({ remoteId: 'b', client: capable('B') });
    vi.advanceTimersByTime(1_000);
    requests.ask('srv', ask(2));
    vi.advanceTimersByTime(1);
    requests.ask('srv', ask(3, 'roots/list'));
    expect(sent.map((frame) => frame.relatedRequestId)).toEqual(['a', 'b', 'b']);
    expect(toChild).toEqual([]);
  });

  it("refuses while another session's call asked within the burst window: whose is unknown", () => {
    inFlight = [{ remoteId: 'a', client: capable('A') }];
    requests.ask('srv', ask(1));
    inFlight.push({ remoteId: 'b', client: capable('B') });
    vi.advanceTimersByTime(5);
    requests.ask('srv', ask(2));
    expect(sent.map((frame) => frame.relatedRequestId)).toEqual(['a']);
    expect(toChild).toMatchObject([{ id: 2, error: { code: -32006 } }]);
  });

  it('notes a capability the client lacked on the answer of its request', () => {
    const request: InFlightRequest = { remoteId: 'a', client: { session: 'A', capabilities: {} } };
    inFlight = [request];
    requests.ask('srv', ask(1));
    expect(toChild).toMatchObject([{ id: 1, error: { code: -32601 } }]);
    const note = { 'io.plantstore/missingClientCapabilities': { sampling: {} } };
    const result = { jsonrpc: '2.0', id: 'a', result: { content: [], isError: true } } as const;
    expect(withMissing(result, request.missing)).toEqual({
      ...result,
      result: { ...result.result, _meta: note },
    });
    const error = { jsonrpc: '2.0', id: 'a', error: { code: -32603, message: 'failed' } } as const;
    expect(withMissing(error, request.missing)).toEqual({
      ...error,
      error: { ...error.error, data: note },
    });
    expect(withMissing(result, undefined)).toBe(result);
  });
});
