import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';

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
  /** Host (an IPv6 literal unbracketed), port, path and decoded credentials, read once. */
  private readonly target: ReturnType<typeof urlToHttpOptions>;

  constructor(
    url: URL,
    private readonly limits: { maxSockets: number; maxAnswerBytes: number; timeoutMs: number },
  ) {
    const https = url.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: limits.maxSockets };
    this.agent = https ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.send = https ? httpsRequest : httpRequest;
    this.target = urlToHttpOptions(url);
  }

  post(headers: Record<string, string>, body: string, signal: AbortSignal): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const request = this.send({
        ...this.target,
        method: 'POST',
        agent: this.agent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        signal,
      });
      const timer = setTimeout(() => request.destroy(timedOut), this.limits.timeoutMs);
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
    const answer = (cut: boolean) =>
      settle({
        status: response.statusCode ?? 0,
        retryAfter: response.headers['retry-after'],
        cut,
      });
    let bytes = 0;
    response.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= this.limits.maxAnswerBytes) return;
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
