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
  private readonly open = new Set<ClientRequest>();
  private reason: Error | undefined;

  /** Why the group was cut; undefined while it was not. */
  get cutReason(): Error | undefined {
    return this.reason;
  }

  /** Ends every request in flight (each fails with `reason`), and any started after. */
  cutAll(reason: Error): void {
    this.reason ??= reason;
    for (const request of this.open) request.destroy(reason);
    this.open.clear();
  }

  /** @internal WebhookPoster's. */
  join(request: ClientRequest): void {
    this.open.add(request);
  }

  /** @internal WebhookPoster's. */
  leave(request: ClientRequest): void {
    this.open.delete(request);
  }
}

const ignore = () => undefined;

/**
 * POSTs notices to one receiver over keep-alive connections (node:http, not fetch: undici's
 * fetch costs several times the CPU per request). Redirects are not followed. The receiver's
 * body is drained unread: only its status counts.
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
      const request = this.send({ ...this.target, headers }, (response: IncomingMessage) => {
        group.leave(request);
        response.on('error', ignore);
        response.resume();
        resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] });
      });
      request.on('error', (error) => {
        group.leave(request);
        reject(error);
      });
      group.join(request);
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
