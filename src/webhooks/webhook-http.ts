import {
  Agent as HttpAgent,
  type ClientRequest,
  type IncomingMessage,
  request as httpRequest,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface PostResult {
  status: number;
  retryAfter: string | undefined;
}

/**
 * Requests in flight that end together: a wave of attempts, cut at its timeout or when the
 * process stops. A plain set the requests join and leave, not an AbortSignal per request:
 * node:http's `signal` option doubled the client's CPU per request (a listener added and
 * removed on the signal each time; 58 against 29 us on Node 24, bench/README.md).
 */
export class RequestGroup {
  /** Each request in flight, with how to fail its attempt. */
  private readonly open = new Map<ClientRequest, (error: Error) => void>();
  private reason: Error | undefined;

  /** Why the group was cut; undefined while it was not. */
  get cutReason(): Error | undefined {
    return this.reason;
  }

  /**
   * Ends every request in flight (each fails with `reason`), and any started after. Each attempt
   * is failed here, not by waiting for its request's 'error': a request still queued in the
   * agent (every socket held by an answer that stalls) emits none until a socket frees.
   */
  cutAll(reason: Error): void {
    this.reason ??= reason;
    for (const [request, fail] of this.open) {
      fail(reason);
      request.destroy(reason);
    }
    this.open.clear();
  }

  /** @internal WebhookPoster's. */
  join(request: ClientRequest, fail: (error: Error) => void): void {
    this.open.set(request, fail);
  }

  /** @internal WebhookPoster's. */
  leave(request: ClientRequest): void {
    this.open.delete(request);
  }
}

/** The receiver closed the connection before its answer's end. */
const cutMidAnswer = Object.assign(new Error('the answer ended early'), { code: 'ECONNRESET' });

/**
 * POSTs notices to one receiver over keep-alive connections (node:http, not fetch: undici's
 * fetch costs several times the CPU per request). Redirects are not followed. The receiver's
 * body is drained unread: only its status counts, once the whole answer has arrived.
 */
export class WebhookPoster {
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  /** The URL taken apart once, not on every request. */
  private readonly target: RequestOptions;

  constructor(url: URL, maxSockets: number) {
    const https = url.protocol === 'https:';
    this.agent = https
      ? new HttpsAgent({ keepAlive: true, maxSockets })
      : new HttpAgent({ keepAlive: true, maxSockets });
    this.send = https ? httpsRequest : httpRequest;
    this.target = {
      protocol: url.protocol,
      // An IPv6 literal comes bracketed in a URL, and without brackets in the options.
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      ...(url.username || url.password
        ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
        : {}),
      method: 'POST',
      agent: this.agent,
    };
  }

  /** `headers` without content-length, which is added here. */
  post(headers: Record<string, string>, body: string, group: RequestGroup): Promise<PostResult> {
    return new Promise((resolve, reject) => {
      if (group.cutReason) {
        reject(group.cutReason);
        return;
      }
      headers['content-length'] = String(Buffer.byteLength(body));
      let settled = false;
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        group.leave(request);
        reject(error);
      };
      // An attempt ends with the receiver's whole answer, not its headers: a body that stalls
      // holds the connection, so the wave's timeout must still cover it (and cut it).
      const request = this.send({ ...this.target, headers }, (response: IncomingMessage) => {
        response.on('error', fail);
        response.on('end', () => {
          if (settled) return;
          settled = true;
          group.leave(request);
          resolve({
            status: response.statusCode ?? 0,
            retryAfter: response.headers['retry-after'],
          });
        });
        response.on('close', () => {
          if (!response.complete) fail(cutMidAnswer);
        });
        response.resume();
      });
      request.on('error', fail);
      group.join(request, fail);
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
