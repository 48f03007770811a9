import { connect, type Socket } from 'node:net';

/**
 * A raw TCP client for what fetch cannot send: lying Content-Length headers, bodies written a
 * few bytes at a time, headers that never end, malformed requests.
 */
export interface RawConnection {
  socket: Socket;
  /** Everything the server sent so far. */
  received: () => string;
  /** True once the server closed (or reset) the connection. */
  closed: () => boolean;
  /** Bytes this client managed to write. */
  written: () => number;
  /** Writes and waits until the socket takes more; false if the connection is gone. */
  write(data: string | Buffer): Promise<boolean>;
}

export function openRaw(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let closed = false;
    let written = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => (closed = true));
    socket.on('error', () => (closed = true));
    socket.once('connect', () =>
      resolve({
        socket,
        received: () => received,
        closed: () => closed,
        written: () => written,
        write: (data) =>
          new Promise<boolean>((done) => {
            if (closed || socket.destroyed) return done(false);
            // Settles on whichever comes first: room for more, or the connection gone.
            const settle = (ok: boolean) => {
              socket.off('drain', onDrain);
              socket.off('close', onClose);
              done(ok);
            };
            const onDrain = () => settle(true);
            const onClose = () => settle(false);
            const flushed = socket.write(data, (error) => {
              if (error) settle(false);
            });
            written += typeof data === 'string' ? Buffer.byteLength(data) : data.length;
            if (flushed) settle(true);
            else socket.once('drain', onDrain).once('close', onClose);
          }),
      }),
    );
    socket.once('error', reject);
  });
}

/** Polls until `condition` holds, at most `timeoutMs`; returns whether it held. */
export async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return condition();
}

/** Status and JSON body of a raw HTTP/1.1 answer. */
export function parseRawAnswer(raw: string): {
  status: number;
  headers: string;
  body: unknown;
} {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  return { status, headers: head.toLowerCase(), body: parsed };
}
