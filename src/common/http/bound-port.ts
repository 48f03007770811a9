import type { Server } from 'node:net';

/** The port a listening server holds: the configured one, or the kernel's pick for 0. */
export function boundPort(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('the server is not listening on a TCP port');
  }
  return address.port;
}
