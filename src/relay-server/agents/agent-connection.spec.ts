import type WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { AgentConnection } from './agent-connection.js';
import { FrameRateLimit } from './frame-rate-limit.js';

/** A socket stand-in: what AgentConnection reads (bufferedAmount) and calls (send, close). */
function fakeSocket() {
  const sent: { text: string; done: () => void }[] = [];
  const socket = {
    bufferedAmount: 0,
    send: (text: string, done: () => void) => sent.push({ text, done }),
    close: () => undefined,
  };
  return { socket, sent, ws: socket as unknown as WebSocket };
}

const limits = { maxFrameBytes: 1000, maxDepth: 100 };
const noRates = new FrameRateLimit({
  framesPerSecond: 0,
  bytesPerSecond: 0,
  inventoryBytesPerMinute: 0,
  maxFrameBytes: 1000,
});

describe('AgentConnection backpressure', () => {
  it('refuses a request with -32005 while more than one frame limit waits to be sent', async () => {
    const { socket, sent, ws } = fakeSocket();
    const connection = new AgentConnection('lab', ws, limits, noRates);
    socket.bufferedAmount = 1000;
    expect(connection.congested).toBeUndefined();
    connection.request('slow', { method: 'tools/call' }, { timeoutMs: 60_000 });
    expect(sent).toHaveLength(1);

    socket.bufferedAmount = 1001;
    expect(connection.congested).toBe(1001);
    const refused = connection.request('slow', { method: 'tools/call' }, { timeoutMs: 60_000 });
    expect(await refused.response).toMatchObject({
      id: refused.id,
      error: { code: -32005, message: expect.stringContaining('1001 bytes wait') as unknown },
    });
    expect(sent).toHaveLength(1);
    expect(connection.inFlight).toBe(1);
    connection.closedByPeer();
  });

  it('calls onWritten when ws has written a notification, or at once when it is not sent', () => {
    const { sent, ws } = fakeSocket();
    const connection = new AgentConnection('lab', ws, limits, noRates);
    let written = 0;
    expect(connection.notify('slow', { method: 'notifications/x' }, () => written++)).toBe(
      undefined,
    );
    expect(written).toBe(0);
    sent[0]!.done();
    expect(written).toBe(1);
    // Over the frame limit: refused, never sent, and the caller's slot is released at once.
    const big = { method: 'notifications/x', params: { padding: 'x'.repeat(2000) } };
    expect(connection.notify('slow', big, () => written++)).toContain('frame limit');
    expect(written).toBe(2);
    expect(sent).toHaveLength(1);
  });
});

describe('AgentConnection progress', () => {
  it("gives each request a random token and takes its progress only from the request's server", () => {
    const { sent, ws } = fakeSocket();
    const connection = new AgentConnection(
      'lab',
      ws,
      { maxFrameBytes: 10_000, maxDepth: 100 },
      noRates,
    );
    const received: unknown[] = [];
    const call = { method: 'tools/call', params: { _meta: { progressToken: 'mine' } } };
    connection.request('slow', call, { timeoutMs: 60_000, sink: (n) => received.push(n) });
    connection.request('slow', call, { timeoutMs: 60_000, sink: () => undefined });
    const tokens = sent.map((s) => {
      const frame = JSON.parse(s.text) as {
        message: { params: { _meta: { progressToken: string } } };
      };
      return frame.message.params._meta.progressToken;
    });
    expect(tokens[0]).toMatch(/^relay-[A-Za-z0-9_-]{22}$/);
    expect(tokens[1]).not.toBe(tokens[0]);
    const progress = (token: unknown) => ({
      method: 'notifications/progress',
      params: { progressToken: token, progress: 1 },
    });
    expect(connection.deliver('other', progress(tokens[0]))).toBe(false);
    expect(connection.deliver('slow', progress('relay-1'))).toBe(false);
    expect(received).toEqual([]);
    expect(connection.deliver('slow', progress(tokens[0]))).toBe(true);
    expect(received).toEqual([{ ...progress('mine') }]);
    connection.closedByPeer();
    expect(connection.deliver('slow', progress(tokens[0]))).toBe(false);
  });
});
