import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import { orTimeout } from '../async/or-timeout.js';

const SLOT = Symbol('in-flight slot');
type Tracked = ServerResponse & { [SLOT]?: number };

/** Graceful stop: no new connections, and `Connection: close` so keep-alive clients move on. */
export class ConnectionDrain {
  // An array, not a Set: once a full GC has moved a Set's table to the old generation, V8 makes
  // each rehashed table there too, and the dead ones keep the responses they held through every
  // scavenge until the next full GC (~2 KB promoted a request, bench/README.md).
  private readonly inFlight: Tracked[] = [];
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
      if (this.inFlight.length === 0) resolve();
    });
    const outcome = (await orTimeout(idle, graceMs)) === 'timeout' ? 'cut' : 'drained';
    for (const server of this.servers) server.closeAllConnections();
    return outcome;
  }

  private track(response: Tracked): void {
    if (this.draining) closeAfter(response);
    response[SLOT] = this.inFlight.push(response) - 1;
    response.once('close', () => this.untrack(response));
  }

  /** The last response takes the closed one's slot. */
  private untrack(response: Tracked): void {
    // Tracked twice (a server passed twice), it leaves once.
    if (this.inFlight[response[SLOT] as number] !== response) return;
    const last = this.inFlight.pop() as Tracked;
    if (last !== response) {
      const slot = response[SLOT] as number;
      this.inFlight[slot] = last;
      last[SLOT] = slot;
    }
    if (this.inFlight.length === 0) this.onIdle?.();
  }
}

function closeAfter(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('Connection', 'close');
}
