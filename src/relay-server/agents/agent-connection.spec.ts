import type WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { AgentConnection } from './agent-connection.js';

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

describe('AgentConnection backpressure', () => {
  it('refuses a request with -32005 while more than one frame limit waits to be sent', async () => {
    const { socket, sent, ws } = fakeSocket();
    const connection = new AgentConnection('lab', ws, limits);
    socket.bufferedAmount = 1000;
    expect(connection.congested).toBeUndefined();
    connection.request('slow', { method: 'tools/call' }, 60_000);
    expect(sent).toHaveLength(1);

    socket.bufferedAmount = 1001;
    expect(connection.congested).toBe(1001);
    const refused = connection.request('slow', { method: 'tools/call' }, 60_000);
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
    const connection = new AgentConnection('lab', ws, limits);
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
