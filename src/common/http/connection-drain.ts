import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import { orTimeout } from '../async/or-timeout.js';

/** Graceful stop: no new connections, and `Connection: close` so keep-alive clients move on. */
export class ConnectionDrain {
  private readonly inFlight = new Set<ServerResponse>();
  private draining = false;
  private onIdle: (() => void) | undefined;

  constructor(private readonly servers: Server[]) {
    for (const server of servers) {
      server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) =>
        this.track(response),
      );
    }
  }

  /** Resolves with 'drained' when no request is in flight, 'cut' when the grace ran out. */
  async drain(graceMs: number): Promise<'drained' | 'cut'> {
    this.draining = true;
    for (const response of this.inFlight) closeAfter(response);
    // net.Server's close, not http.Server's, which destroys idle keep-alive connections at once
    // and so resets a request just sent on one; here it is answered, with Connection: close.
    for (const server of this.servers) NetServer.prototype.close.call(server);
    const idle = new Promise<void>((resolve) => {
      this.onIdle = resolve;
      if (this.inFlight.size === 0) resolve();
    });
    const outcome = (await orTimeout(idle, graceMs)) === 'timeout' ? 'cut' : 'drained';
    for (const server of this.servers) server.closeAllConnections();
    return outcome;
  }

  private track(response: ServerResponse): void {
    if (this.draining) closeAfter(response);
    this.inFlight.add(response);
    response.once('close', () => {
      this.inFlight.delete(response);
      if (this.inFlight.size === 0) this.onIdle?.();
    });
  }
}

function closeAfter(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('Connection', 'close');
}
