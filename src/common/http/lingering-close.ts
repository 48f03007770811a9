import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long, and how much, a closing connection keeps reading what the client still sends. */
export const LINGER_MS = 2_000;
export const LINGER_MAX_BYTES = 1024 * 1024;

/**
 * Answers with `Connection: close` a request whose body was not read to its end (a 401 before
 * the body, a 413 at its 64 KiB limit, a 408), then closes the connection the way Apache and
 * nginx do ("lingering close"): send the answer and a FIN, then read and discard what the
 * client is still sending for at most 2 s or 1 MiB before closing. Closing at once with
 * unread bytes makes the kernel send a reset, which can destroy the answer before the client
 * has read it; reading on to the end of the body (what Node does for kept-alive connections)
 * would let a client make us read 10 GB.
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
