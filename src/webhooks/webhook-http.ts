import {
  Agent as HttpAgent,
  type IncomingMessage,
  request as httpRequest,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface Answer {
  status: number;
  retryAfter: string | undefined;
  /** The answer was longer than the limit: the rest was not read (the connection closed). */
  cut: boolean;
}

/** What an attempt fails with when its time runs out. */
export const timedOut = Object.assign(new Error('the attempt timed out'), { name: 'TimeoutError' });
const endedEarly = Object.assign(new Error('the answer ended early'), { code: 'ECONNRESET' });

/**
 * POSTs to one receiver over keep-alive connections (node:http: fetch costs several times the
 * CPU per request). Redirects are not followed. An attempt ends with the answer's end, its
 * first `maxAnswerBytes` bytes, or `timeoutMs`, whichever comes first: a receiver that streams
 * an endless answer costs a few KiB, not the whole timeout's worth.
 */
export class WebhookPoster {
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly target: RequestOptions;

  private readonly maxAnswerBytes: number;
  private readonly timeoutMs: number;

  constructor(
    url: URL,
    { maxSockets, ...limits }: { maxSockets: number; maxAnswerBytes: number; timeoutMs: number },
  ) {
    ({ maxAnswerBytes: this.maxAnswerBytes, timeoutMs: this.timeoutMs } = limits);
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

  post(headers: Record<string, string>, body: string, signal: AbortSignal): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const request = this.send({
        ...this.target,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        signal,
      });
      const timer = setTimeout(() => request.destroy(timedOut), this.timeoutMs);
      const settle = (outcome: Answer | Error) => {
        clearTimeout(timer);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      request.on('error', settle);
      request.on('response', (response) => this.read(response, settle));
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }

  /** Reads at most `maxAnswerBytes` of the answer; the first outcome settles (a Promise's). */
  private read(response: IncomingMessage, settle: (outcome: Answer | Error) => void): void {
    let bytes = 0;
    const answer = (cut: boolean) =>
      settle({
        status: response.statusCode ?? 0,
        retryAfter: response.headers['retry-after'],
        cut,
      });
    response.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= this.maxAnswerBytes) return;
      answer(true);
      response.destroy();
    });
    response.on('end', () => answer(false));
    response.on('error', settle);
    response.on('close', () => {
      if (!response.complete) settle(endedEarly);
    });
  }
}
