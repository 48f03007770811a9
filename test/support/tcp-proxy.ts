import {
  type AddressInfo,
  createConnection,
  createServer,
  type Server,
  type Socket,
} from 'node:net';

/**
 * A loopback TCP proxy in front of the test PostgreSQL server, so a test can make "the
 * database" die, hang or come back without stopping the server the other tests share. It also
 * stands in for CloudNativePG's `-rw` Service, which moves to another server in a failover.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private mode: 'forward' | 'hang' = 'forward';

  /** The proxy's port: the kernel's pick at the first start, the same one at each restart. */
  port = 0;

  constructor(private target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.mode = 'forward';
    this.server = createServer((client) => {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => client.destroy());
      if (this.mode === 'hang') return; // accept, then say nothing
      const upstream = createConnection(this.target);
      this.sockets.add(upstream);
      upstream.on('close', () => this.sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    const server = this.server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.port = (server.address() as AddressInfo).port;
  }

  /**
   * New connections go to `target`. Like a Service whose endpoints change, connections already
   * open stay where they are unless `cut` (the old server's pod is gone).
   */
  moveTo(target: { host: string; port: number }, { cut }: { cut: boolean }): void {
    this.target = target;
    if (cut) this.cutAll();
  }

  /** New connections are accepted but never answered; open ones are cut. */
  hang(): void {
    this.mode = 'hang';
    this.cutAll();
  }

  /** Nothing listens any more: connections are refused, open ones cut. */
  async stop(): Promise<void> {
    this.cutAll();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private cutAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
