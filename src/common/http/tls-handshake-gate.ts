import type { Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { TokenBucket } from '../logging/token-bucket.js';

export interface TlsHandshakeGate {
  /** TLS handshakes started a second, at most (50 ms' worth may start at once). */
  perSecond: number;
  /** How long a connection may wait for its turn; past it, it is closed unstarted. */
  maxWaitMs: number;
  /** Addresses that never wait (the relay's own replicas: one kept waiting would look frozen). */
  exempt?: (address: string) => boolean;
}

// Handshakes all started at once (thousands of agents reconnecting) time out together; in turns,
// each finishes, timed from its turn. A rate, not a count: stalled handshakes would hold a count.
export function gateTlsHandshakes(
  server: TlsServer,
  gate: TlsHandshakeGate,
  waitedTooLong: (socket: Socket) => void,
): void {
  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  if (listeners.length !== 1)
    throw new Error('gate TLS handshakes before other connection listeners');
  const startHandshake = listeners[0]!;
  server.removeListener('connection', startHandshake);
  // A burst of 50 ms' worth: a second's worth started at once held the event loop (and every
  // other client's request) for as long as their handshakes took.
  const burst = Math.max(1, Math.ceil(gate.perSecond / 20));
  const bucket = new TokenBucket({ ratePerSecond: gate.perSecond, burst });
  // Waiting connections in arrival order, each with the timer that closes it unstarted.
  const waiting = new Map<Socket, NodeJS.Timeout>();
  let nextTurn: NodeJS.Timeout | undefined;

  const start = (socket: Socket) => startHandshake.call(server, socket);
  const startWaiting = () => {
    nextTurn = undefined;
    for (const [socket, expiry] of waiting) {
      if (!bucket.take()) break;
      waiting.delete(socket);
      clearTimeout(expiry);
      start(socket);
    }
    if (waiting.size > 0) nextTurn = setTimeout(startWaiting, 1000 / gate.perSecond);
  };
  const wait = (socket: Socket) => {
    // The longest waiting connection is the first in line: it starts if a turn is free by now.
    const expiry = setTimeout(() => {
      waiting.delete(socket);
      if (bucket.take()) return start(socket);
      waitedTooLong(socket);
      socket.destroy();
    }, gate.maxWaitMs);
    waiting.set(socket, expiry);
    socket.once('close', () => {
      clearTimeout(waiting.get(socket));
      waiting.delete(socket);
    });
    nextTurn ??= setTimeout(startWaiting, 1000 / gate.perSecond);
  };

  server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return; // refused by a cap already
    if (gate.exempt?.(socket.remoteAddress ?? '')) return start(socket);
    if (waiting.size === 0 && bucket.take()) start(socket);
    else wait(socket);
  });
}
