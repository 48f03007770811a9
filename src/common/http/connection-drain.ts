import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * Graceful stop of HTTP listeners. From `drain()` on, every answer says `Connection: close`
 * (the ones in flight included, when their headers are not out yet), so keep-alive clients
 * move on instead of sending more requests on the old connection; the listeners stop
 * accepting, idle connections are closed, and `drain()` resolves as soon as the last
 * connection is gone, or after `graceMs` with the remaining connections cut.
 */
export class ConnectionDrain {
  private readonly inFlight = new Set<ServerResponse>();
  private draining = false;

  constructor(private readonly servers: Server[]) {
    for (const server of servers) {
      server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) =>
        this.track(response),
      );
    }
  }

  /** Resolves with 'drained' when every connection has closed, 'cut' when the grace ran out. */
  async drain(graceMs: number): Promise<'drained' | 'cut'> {
    this.draining = true;
    for (const response of this.inFlight) closeAfter(response);
    const closed = Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            // Closing a server that is not listening still emits 'close' once it is drained.
            server.close(() => resolve());
            server.closeIdleConnections();
          }),
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      closed.then(() => 'drained' as const),
      new Promise<'cut'>((resolve) => {
        timer = setTimeout(() => resolve('cut'), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (outcome === 'cut') for (const server of this.servers) server.closeAllConnections();
    return outcome;
  }

  private track(response: ServerResponse): void {
    if (this.draining) closeAfter(response);
    this.inFlight.add(response);
    response.once('close', () => this.inFlight.delete(response));
  }
}

function closeAfter(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('Connection', 'close');
}
