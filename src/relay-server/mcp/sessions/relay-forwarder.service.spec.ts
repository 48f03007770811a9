import { describe, expect, it } from 'vitest';
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { AgentConnection } from '../../agents/agent-connection.js';
import type { RelayConfig } from '../../config/relay-config.js';
import type { JsonRpcResponse } from '../../json-rpc/json-rpc.js';
import { RelayForwarder } from './relay-forwarder.service.js';
import type { RelaySession } from './session-store.service.js';

const config = {
  maxInFlightPerAgent: 10,
  maxInFlightPerClient: 10,
  requestTimeoutMs: 60_000,
} as RelayConfig;
const counted: string[] = [];
const forwarder = new RelayForwarder(
  config,
  { inc: (labels: { outcome: string }) => counted.push(labels.outcome) } as unknown as Counter<
    'agent' | 'outcome'
  >,
  { startTimer: () => () => 0 } as unknown as Histogram<'agent'>,
  { inc: () => undefined, dec: () => undefined } as unknown as Gauge<'agent'>,
);

/** An agent connection that records what it is sent and answers only when told. */
function fakeConnection() {
  const sent: { server: string; message: Record<string, unknown> }[] = [];
  const waiting = new Map<number, (answer: JsonRpcResponse) => void>();
  let next = 1;
  const connection = {
    request(server: string, message: Record<string, unknown>) {
      const id = next++;
      sent.push({ server, message: { ...message, id } });
      return {
        id,
        response: new Promise<JsonRpcResponse>((resolve) => waiting.set(id, resolve)),
      };
    },
    served: () => undefined,
    notify(server: string, message: Record<string, unknown>) {
      sent.push({ server, message });
      return undefined;
    },
    forget(id: number) {
      waiting.get(id)?.({ jsonrpc: '2.0', id, error: { code: -32800, message: 'cancelled' } });
    },
  };
  const answer = (id: number, result: unknown) => waiting.get(id)?.({ jsonrpc: '2.0', id, result });
  return { connection: connection as unknown as AgentConnection, sent, answer };
}

const session = (): RelaySession => ({
  id: 's',
  client: 'alice',
  agent: 'shop',
  inFlight: new Map(),
  lastUsed: 0,
});
const call = (id: string) => ({ jsonrpc: '2.0', id, method: 'tools/call' });

describe('RelayForwarder', () => {
  it("answers with the client's id and the agent's result", async () => {
    const { connection, sent, answer } = fakeConnection();
    const s = session();
    const answered = forwarder.run(s, call('a'), new AbortController().signal, (signal) =>
      forwarder.send('alice', connection, 'echo', call('a'), signal),
    );
    expect(sent).toEqual([
      { server: 'echo', message: { jsonrpc: '2.0', method: 'tools/call', id: 1 } },
    ]);
    answer(1, { ok: true });
    expect(await answered).toEqual({ jsonrpc: '2.0', id: 'a', result: { ok: true } });
    expect(s.inFlight.size).toBe(0);
    expect(counted.at(-1)).toBe('ok');
  });

  it('refuses a second request with an id in flight, and cancels by the id', async () => {
    const { connection, sent } = fakeConnection();
    const s = session();
    const first = forwarder.run(s, call('a'), new AbortController().signal, (signal) =>
      forwarder.send('alice', connection, 'echo', call('a'), signal),
    );
    const again = await forwarder.run(s, call('a'), new AbortController().signal, () => {
      throw new Error('must not run');
    });
    expect(again.error?.code).toBe(-32600);
    forwarder.cancel(s, { requestId: 'a', reason: 'user' });
    expect(await first).toMatchObject({ id: 'a', error: { code: -32800 } });
    expect(sent.at(-1)).toEqual({
      server: 'echo',
      message: {
        method: 'notifications/cancelled',
        params: { requestId: 1, reason: 'user' },
      },
    });
  });

  it('cancels every request of a fan-out when the client hangs up, and sends no more', async () => {
    const { connection, sent } = fakeConnection();
    const hangUp = new AbortController();
    const answered = forwarder.run(session(), call('b'), hangUp.signal, async (signal) => {
      const both = Promise.all([
        forwarder.send('alice', connection, 'one', call('b'), signal),
        forwarder.send('alice', connection, 'two', call('b'), signal),
      ]);
      hangUp.abort();
      await both;
      return forwarder.send('alice', connection, 'three', call('b'), signal);
    });
    expect((await answered).error?.code).toBe(-32800);
    const cancelled = sent.filter((m) => m.message.method === 'notifications/cancelled');
    expect(
      cancelled.map((m) => [m.server, (m.message.params as { reason: string }).reason]),
    ).toEqual([
      ['one', 'client disconnected'],
      ['two', 'client disconnected'],
    ]);
    expect(sent.map((m) => m.server)).not.toContain('three');
  });

  it('does not send a request whose client hung up before it was admitted', async () => {
    const { connection, sent } = fakeConnection();
    const hangUp = new AbortController();
    hangUp.abort();
    const answered = await forwarder.run(session(), call('c'), hangUp.signal, (signal) =>
      forwarder.send('alice', connection, 'echo', call('c'), signal),
    );
    expect(answered).toMatchObject({ id: 'c', error: { code: -32800 } });
    expect(sent).toEqual([]);
  });
});
