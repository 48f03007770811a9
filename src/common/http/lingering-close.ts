import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long, and how much, a closing connection keeps reading what the client still sends. */
export const LINGER_MS = 2_000;
export const LINGER_MAX_BYTES = 1024 * 1024;

/**
 * Closes the connection of a request whose body was not read to its end (401, 413, 408) as
 * Apache and nginx do: the answer and a FIN, then up to 2 s or 1 MiB of what the client still
 * sends is discarded. Closing at once makes the kernel reset the answer away; reading the whole
 * body would let a client make us read 10 GB.
 */
export function closeAfterAnswer(request: IncomingMessage, response: ServerResponse): void {
  if (response.headersSent) return;
  response.setHeader('Connection', 'close');
  const socket = request.socket as Socket & { destroySoon?: () => void };
  // Node calls destroySoon() once an answer with `Connection: close` is written.
  socket.destroySoon = () => {
    socket.end();
    let discarded = 0;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
    request.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > LINGER_MAX_BYTES) socket.destroy();
    });
    request.resume();
  };
}
