import type { Server } from 'node:net';

/**
 * The port a listening server holds: the configured one, or the kernel's pick when it was 0.
 * The start-up log line reports these, so a caller that asked for 0 learns where to connect.
 */
export function boundPort(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('the server is not listening on a TCP port');
  }
  return address.port;
}
