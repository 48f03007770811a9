import { type AddressInfo, createServer } from 'node:net';

/**
 * A loopback port where nothing listens, for a test of "connection refused" (a database that
 * is down at start). Our own services and fixtures bind port 0 and say which port they got;
 * this is the one case that wants a port nobody holds: the kernel's pick, closed again.
 */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
