import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { type GarbageLine, type StdoutLimits, StdoutReader } from './stdout-reader.js';

function setup(limits: Partial<StdoutLimits> = {}) {
  let now = 0;
  const messages: JSONRPCMessage[] = [];
  const garbage: GarbageLine[] = [];
  const floods: string[] = [];
  const unknown: unknown[] = [];
  const reader = new StdoutReader(
    {
      message: (m) => messages.push(m),
      garbage: (g) => garbage.push(g),
      unknownAnswer: (id) => unknown.push(id),
      flood: (_budget, reason) => floods.push(reason),
    },
    { now: () => now, ...limits },
  );
  // The answers these tests read are to requests the child was sent.
  for (const id of [1, 2, 3, 7, 'relay:7', 'relay:42']) reader.sent(request(id));
  return { reader, messages, garbage, floods, unknown, tick: (ms: number) => (now += ms) };
}

const line = (message: JSONRPCMessage) => Buffer.from(`${JSON.stringify(message)}\n`);
const request = (id: string | number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'ping' });
const answer = (id: string | number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: {} });
const ping = (id: number | string) => `${JSON.stringify(answer(id))}\n`;
const note: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/message' };

describe('StdoutReader', () => {
  it('reads messages split across chunks and several in one chunk', () => {
    const { reader, messages, garbage } = setup();
    const text = ping(1) + ping(2) + ping(3);
    reader.write(Buffer.from(text.slice(0, 10)));
    reader.write(Buffer.from(text.slice(10)));
    expect(messages.map((m) => (m as { id: number }).id)).toEqual([1, 2, 3]);
    expect(garbage).toEqual([]);
  });

  it('drops lines that are not JSON-RPC, counts them, and keeps reading', () => {
    const { reader, messages, garbage, floods } = setup();
    reader.write(Buffer.from(`Server started on stdio\n\n   \n{"not":"rpc"}\n{broken\n${ping(7)}`));
    expect(messages).toHaveLength(1);
    expect(garbage.map((g) => g.reason)).toEqual([
      'not JSON',
      'JSON but not a JSON-RPC message',
      'not JSON',
    ]);
    expect(reader.garbageLines).toBe(3);
    expect(floods).toEqual([]);
  });

  it('reports a flood once the garbage budget is spent, then ignores the rest', () => {
    const { reader, messages, floods } = setup({ lineBudget: { burst: 10, ratePerSecond: 1 } });
    for (let i = 0; i < 1_000; i++) reader.write(Buffer.from(`garbage ${i}\n`));
    reader.write(Buffer.from(ping(1)));
    expect(floods).toEqual(['wrote too much to stdout that is not JSON-RPC (11 lines, 100 bytes)']);
    expect(reader.garbageLines).toBe(11);
    expect(messages).toEqual([]);
  });

  it('lets a slow trickle of garbage through: the budget refills', () => {
    const { reader, floods, tick } = setup({ lineBudget: { burst: 5, ratePerSecond: 2 } });
    for (let i = 0; i < 100; i++) {
      reader.write(Buffer.from(`debug line ${i}\n`));
      tick(1_000);
    }
    expect(floods).toEqual([]);
  });

  it('skips a line over the limit without keeping it, and answers its relay id', () => {
    const { reader, messages, garbage } = setup({ maxLineBytes: 1_000 });
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 'relay:42',
      result: { text: 'x'.repeat(50_000) },
    });
    for (let i = 0; i < big.length; i += 4_096) reader.write(Buffer.from(big.slice(i, i + 4_096)));
    reader.write(Buffer.from(`\n${ping(1)}`));
    expect(garbage).toHaveLength(1);
    expect(garbage[0]?.reason).toBe('line over the 1000-byte limit (dropped)');
    expect(reader.garbageBytes).toBe(big.length);
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 'relay:42',
        error: {
          code: -32004,
          message: `answer of the MCP server dropped: line of ${big.length} bytes, over the 1000-byte limit`,
        },
      },
      { jsonrpc: '2.0', id: 1, result: {} },
    ]);
  });

  it('drops a message nested 6,000 deep; an answer fails its request with -32004', () => {
    const { reader, messages, garbage } = setup();
    const deep = `${'['.repeat(6_000)}${']'.repeat(6_000)}`;
    reader.write(Buffer.from(`{"jsonrpc":"2.0","id":3,"result":{"tools":${deep}}}\n`));
    reader.write(
      Buffer.from(`{"jsonrpc":"2.0","method":"notifications/message","params":{"d":${deep}}}\n`),
    );
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 3,
        error: {
          code: -32004,
          message: 'answer of the MCP server dropped: nested deeper than 99 levels',
        },
      },
    ]);
    expect(garbage.map((g) => g.reason)).toEqual([
      'nested deeper than 99 levels',
      'nested deeper than 99 levels',
    ]);
  });

  it('finds the relay id of an oversized answer at its end too', () => {
    const { reader, messages } = setup({ maxLineBytes: 1_000 });
    reader.write(
      Buffer.from(`{"result":{"text":"${'y'.repeat(5_000)}"},"id":"relay:7","jsonrpc":"2.0"}\n`),
    );
    expect(messages).toMatchObject([{ id: 'relay:7', error: { code: -32004 } }]);
  });

  it('charges a line over the limit at once, and restarts a child whose line never ends', () => {
    const { reader, messages, garbage, floods } = setup({
      maxLineBytes: 1_000,
      byteBudget: { burst: 100_000, ratePerSecond: 1_000 },
    });
    const chunk = Buffer.alloc(4_096, 'x');
    reader.write(chunk);
    // Over the limit: charged now, without waiting for a newline that may never come.
    expect(garbage).toHaveLength(1);
    expect(reader.garbageLines).toBe(1);
    expect(reader.garbageBytes).toBe(4_096);
    for (let i = 0; i < 100 && floods.length === 0; i++) reader.write(chunk);
    expect(floods).toHaveLength(1);
    expect(reader.garbageBytes).toBeGreaterThan(100_000);
    // Flooded: not even a good message is read any more.
    reader.write(Buffer.from(`\n${ping(1)}`));
    expect(messages).toEqual([]);
  });
});

describe('StdoutReader budgets for what nobody asked', () => {
  it('passes the answer to a request sent, once; drops a second one and unknown ids', () => {
    const { reader, messages, unknown } = setup();
    reader.sent(request(9));
    for (const id of ['9', 9, 9]) reader.write(line(answer(id))); // 1 and "1" are different ids
    expect(messages).toEqual([answer(9)]);
    expect(unknown).toEqual(['9', 9]);
  });

  it('forgets a request once it is cancelled, and the oldest beyond the limit', () => {
    const { reader, messages } = setup({ maxOutstanding: 2 });
    reader.sent(request('relay:1'));
    reader.sent({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'relay:1' },
    });
    reader.write(line(answer('relay:1')));
    for (const id of [12, 13, 14]) reader.sent(request(id));
    reader.write(Buffer.concat([line(answer(12)), line(answer(14))]));
    expect(messages).toEqual([answer(14)]);
  });

  it('lets notifications through at a normal rate and floods once over their budget', () => {
    const { reader, messages, floods, tick } = setup({
      notificationBudget: { burst: 10, ratePerSecond: 5 },
    });
    for (let i = 0; i < 100; i++) {
      reader.write(line(note));
      tick(250);
    }
    expect(messages).toHaveLength(100);
    for (let i = 0; i < 100; i++) reader.write(line(note));
    expect(floods).toHaveLength(1);
    expect(messages).toHaveLength(110);
  });

  it('floods once over the budget for unknown answers', () => {
    const { reader, floods } = setup({ unknownAnswerBudget: { burst: 5, ratePerSecond: 1 } });
    for (let i = 0; i < 20; i++) reader.write(line(answer(`x${i}`)));
    expect(floods).toEqual([
      'sent too many messages nobody asked for (0 notifications or requests, 6 answers to unknown ids)',
    ]);
  });
});
