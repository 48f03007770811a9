import {
  Agent as HttpAgent,
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
 * POSTs notices to one receiver over keep-alive connections (node:http, not fetch: undici's
 * fetch costs several times the CPU per request, and the lane runs on the API's event loop).
 * Redirects are not followed. The receiver's body is drained unread: only its status counts.
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

  post(headers: Record<string, string>, body: string, signal: AbortSignal): Promise<PostResult> {
    return new Promise((resolve, reject) => {
      const request = this.send(
        {
          ...this.target,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          signal,
        },
        (response: IncomingMessage) => {
          const retryAfter = response.headers['retry-after'];
          response.on('error', () => undefined);
          response.resume();
          resolve({ status: response.statusCode ?? 0, retryAfter });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
