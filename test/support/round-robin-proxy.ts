import {
  type AddressInfo,
  createConnection,
  createServer,
  type Server,
  type Socket,
} from 'node:net';

/**
 * A plain TCP load balancer in front of several relay replicas: each new connection goes to
 * the next replica in turn (no stickiness), skipping one that refuses it, as a Service's
 * endpoints do once a dead pod is gone.
 */
export class RoundRobinProxy {
  private server: Server | undefined;
  private turn = 0;
  readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly targets: () => number[]) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      // From the start: a client can reset while its upstream is still connecting.
      client.on('error', () => client.destroy());
      this.accept(client);
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private accept(client: Socket, tries = 0): void {
    const ports = this.targets();
    const port = ports[this.turn++ % Math.max(ports.length, 1)];
    if (port === undefined || tries >= ports.length) {
      client.destroy();
      return;
    }
    client.pause();
    const upstream = createConnection({ host: '127.0.0.1', port });
    // Refused (a replica that is gone): the next one takes the connection.
    upstream.once('error', () => this.accept(client, tries + 1));
    upstream.once('connect', () => {
      upstream.removeAllListeners('error');
      // The client reset while its upstream was connecting: nothing to join.
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      this.track(client, upstream);
      client.pipe(upstream).pipe(client);
      client.resume();
    });
  }

  private track(client: Socket, upstream: Socket): void {
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    }
    upstream.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}
