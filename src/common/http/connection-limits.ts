import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import { InFlightLimiter } from '../async/in-flight-limiter.js';
import { gateTlsHandshakes, type TlsHandshakeGate } from './tls-handshake-gate.js';

/** Caps on the open connections of one listener (0 turns a cap off). */
export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /** Addresses neither the per-address cap nor the handshake gate holds (the relay's replicas). */
  exempt?: (address: string) => boolean;
  /** A header timeout of the listener's own (the probe ports), reported as `headers_timeout`. */
  headersTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this (Node's default, 5 s, races clients). */
  keepAliveTimeoutMs?: number;
  /** TLS handshakes taken in turns (a TLS listener only). */
  tlsHandshakes?: TlsHandshakeGate;
}

/** Why a connection was refused or closed before it carried a request. */
export type ConnectionRefusal =
  | 'too_many'
  | 'too_many_from_address'
  | 'headers_timeout'
  | 'tls_handshake_timeout'
  | 'tls_handshake_wait'
  | 'tls_handshake_failed';

// Holds a listener to `limits`: a connection past a cap is closed as it is accepted, before TLS
// or HTTP spend anything on it, and reported, as are failed TLS handshakes. Call before listen.
export function limitConnections(
  server: Server,
  limits: ConnectionLimits,
  refused: (reason: ConnectionRefusal, address: string | undefined) => void,
): void {
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  server.on('drop', (data?: { remoteAddress?: string }) =>
    refused('too_many', data?.remoteAddress),
  );
  // First, while TLS's own listener is the only one it could take for its own.
  if (limits.tlsHandshakes && limits.tlsHandshakes.perSecond > 0 && server instanceof TlsServer)
    gateTlsHandshakes(server, { exempt: limits.exempt, ...limits.tlsHandshakes }, (socket) =>
      refused('tls_handshake_wait', socket.remoteAddress),
    );
  if (limits.maxConnectionsPerAddress > 0) capPerAddress(server, limits, refused);
  if (limits.headersTimeoutMs !== undefined) {
    // Node's timeout check closes a connection whose headers are late (idle ones included).
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
        refused('headers_timeout', socket.remoteAddress);
    });
  }
  // tls.Server emits this for a handshake that failed or ran past its handshakeTimeout; a plain
  // server never does. A reset during the handshake is the peer's own choice, not counted.
  server.on('tlsClientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET') return;
    const reason =
      error.code === 'ERR_TLS_HANDSHAKE_TIMEOUT' ? 'tls_handshake_timeout' : 'tls_handshake_failed';
    refused(reason, socket.remoteAddress);
  });
}

/** Closes a connection from an address that holds `maxConnectionsPerAddress` already. */
function capPerAddress(
  server: Server,
  limits: ConnectionLimits,
  refused: (reason: ConnectionRefusal, address: string | undefined) => void,
): void {
  const perAddress = new InFlightLimiter(limits.maxConnectionsPerAddress);
  // Prepended: the socket is closed before the TLS or HTTP listener sets anything up on it.
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return void socket.destroy(); // gone already
    if (limits.exempt?.(address)) return;
    const release = perAddress.acquire(address);
    if (!release) {
      refused('too_many_from_address', address);
      socket.destroy();
      return;
    }
    socket.once('close', release);
  });
}
