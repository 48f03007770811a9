import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { gateTlsHandshakes } from './tls-handshake-gate.js';

/** A server with the TLS listener that starts a handshake, counting the sockets it got. */
function gatedServer(perSecond: number, exempt?: (address: string) => boolean) {
  const server = new EventEmitter();
  const started: Socket[] = [];
  server.on('connection', (socket: Socket) => started.push(socket));
  const gate = { perSecond, maxWaitMs: 10_000, exempt };
  gateTlsHandshakes(server as unknown as TlsServer, gate, () => {});
  const connect = (remoteAddress = '10.0.0.9') => {
    const socket = Object.assign(new EventEmitter(), {
      remoteAddress,
      destroyed: false,
      destroy: () => {},
    });
    server.emit('connection', socket);
  };
  return { started, connect };
}

describe('gateTlsHandshakes', () => {
  afterEach(() => vi.useRealTimers());

  it('starts 50 ms worth of handshakes at once, then the rest in turns', () => {
    vi.useFakeTimers();
    const { started, connect } = gatedServer(200);
    for (let i = 0; i < 30; i++) connect();
    expect(started).toHaveLength(10);
    vi.advanceTimersByTime(100);
    expect(started).toHaveLength(30);
  });

  it("never holds back the relay's own replicas, even while agents wait", () => {
    vi.useFakeTimers();
    const { started, connect } = gatedServer(200, (address) => address === '10.0.0.2');
    for (let i = 0; i < 30; i++) connect();
    for (let i = 0; i < 5; i++) connect('10.0.0.2');
    expect(started).toHaveLength(15);
  });
});
