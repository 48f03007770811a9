import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { gateTlsHandshakes } from './tls-handshake-gate.js';

/** A server with the TLS listener that starts a handshake, counting the sockets it got. */
function gatedServer(perSecond: number) {
  const server = new EventEmitter();
  const started: Socket[] = [];
  server.on('connection', (socket: Socket) => started.push(socket));
  gateTlsHandshakes(server as unknown as TlsServer, { perSecond, maxWaitMs: 10_000 }, () => {});
  const connect = () => {
    const socket = Object.assign(new EventEmitter(), { destroyed: false, destroy: () => {} });
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
});
