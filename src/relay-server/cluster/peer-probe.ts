import { type Dispatcher, request } from 'undici';

export interface PeerProbeOptions {
  /** A peer answers every request by then, if only with -32003. */
  requestTimeoutMs: number;
  /** How long a ping may take before the peer counts as frozen. */
  pingTimeoutMs: number;
  pingUrl: (peer: string) => URL;
  pingHeaders: (url: URL) => Record<string, string>;
  dispatcher: Dispatcher;
  /** A peer that did not answer its ping; `cut`: the requests that were waiting on it. */
  onFrozen: (peer: string, cut: number) => void;
}

// Finds a frozen peer (sockets open, nothing answers): a forward unanswered at the request timeout
// pings it (one ping per peer at a time); no pong ends every request waiting on it now.
export class PeerProbe {
  private readonly waiting = new Map<string, Set<AbortController>>();
  private readonly pinging = new Set<string>();

  constructor(private readonly options: PeerProbeOptions) {}

  /** One forwarded request while it waits: cut through `signal`, `done` once it is over. */
  track(peer: string, answered: () => boolean) {
    const controller = new AbortController();
    const onPeer = this.waiting.get(peer) ?? new Set();
    this.waiting.set(peer, onPeer.add(controller));
    const late = setTimeout(() => {
      if (!answered()) this.ping(peer);
    }, this.options.requestTimeoutMs);
    const done = () => {
      clearTimeout(late);
      onPeer.delete(controller);
      if (onPeer.size === 0 && this.waiting.get(peer) === onPeer) this.waiting.delete(peer);
    };
    return { signal: controller.signal, done };
  }

  private ping(peer: string): void {
    if (this.pinging.has(peer)) return;
    this.pinging.add(peer);
    void this.alive(peer)
      .then((alive) => {
        if (!alive) this.cut(peer);
      })
      .finally(() => this.pinging.delete(peer));
  }

  private cut(peer: string): void {
    const onPeer = this.waiting.get(peer) ?? new Set();
    this.waiting.delete(peer);
    for (const controller of onPeer) controller.abort();
    this.options.onFrozen(peer, onPeer.size);
  }

  /** Any HTTP answer shows the peer's process is running; no answer in time, that it is not. */
  async alive(peer: string): Promise<boolean> {
    const url = this.options.pingUrl(peer);
    try {
      const answer = await request(url, {
        dispatcher: this.options.dispatcher,
        headers: this.options.pingHeaders(url),
        signal: AbortSignal.timeout(this.options.pingTimeoutMs),
      });
      answer.body.on('error', () => undefined).resume();
      return true;
    } catch {
      return false;
    }
  }
}
