import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { RelayTapTransport } from './relay-tap-transport.js';

class FakeTransport implements Transport {
  sent: JSONRPCMessage[] = [];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  start = () => Promise.resolve();
  close = () => Promise.resolve();
  send(message: JSONRPCMessage) {
    this.sent.push(message);
    return Promise.resolve();
  }
}

function setup() {
  const inner = new FakeTransport();
  const tap = new RelayTapTransport(inner);
  const toClient: JSONRPCMessage[] = [];
  const toRelay: JSONRPCMessage[] = [];
  tap.onmessage = (message) => toClient.push(message);
  tap.relayListener = (message) => toRelay.push(message);
  return { inner, tap, toClient, toRelay };
}

describe('RelayTapTransport', () => {
  it('routes responses to relay ids to the relay, the rest to the Client', () => {
    const { inner, toClient, toRelay } = setup();
    inner.onmessage?.({ jsonrpc: '2.0', id: 'relay:7', result: {} });
    inner.onmessage?.({ jsonrpc: '2.0', id: 3, result: {} });
    expect(toRelay).toEqual([{ jsonrpc: '2.0', id: 'relay:7', result: {} }]);
    expect(toClient).toEqual([{ jsonrpc: '2.0', id: 3, result: {} }]);
  });

  it('keeps the raw initialize result', async () => {
    const { inner, tap } = setup();
    await tap.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} });
    const result = {
      protocolVersion: '2025-11-25',
      capabilities: { tools: {} },
      serverInfo: { name: 'x', version: '1' },
    };
    inner.onmessage?.({ jsonrpc: '2.0', id: 0, result });
    expect(tap.initializeResult).toEqual(result);
  });

  it('gives notifications to both, progress only to the relay', () => {
    const { inner, toClient, toRelay } = setup();
    inner.onmessage?.({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    inner.onmessage?.({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: 1, progress: 1 },
    });
    expect(toRelay.map((m) => 'method' in m && m.method)).toEqual([
      'notifications/tools/list_changed',
      'notifications/progress',
    ]);
    expect(toClient.map((m) => 'method' in m && m.method)).toEqual([
      'notifications/tools/list_changed',
    ]);
  });

  it('passes requests for the client to the relay only, the rest (ping) to the Client', () => {
    const { inner, toClient, toRelay } = setup();
    for (const method of ['roots/list', 'sampling/createMessage', 'elicitation/create']) {
      inner.onmessage?.({ jsonrpc: '2.0', id: 'relay:1', method });
    }
    inner.onmessage?.({ jsonrpc: '2.0', id: 7, method: 'ping' });
    expect(toRelay.map((m) => (m as { method: string }).method)).toEqual([
      'roots/list',
      'sampling/createMessage',
      'elicitation/create',
    ]);
    expect(toClient).toEqual([{ jsonrpc: '2.0', id: 7, method: 'ping' }]);
  });
});
