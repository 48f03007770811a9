import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import type { buildConnector, Pool } from 'undici';
import type { WebhookConfig } from '../config/app-config.js';
import { isPrivateAddress } from '../config/private-addresses.js';

export type Answer = Awaited<ReturnType<WebhookPoster['post']>>;

/** `timeoutMs` bounds the whole attempt: connect, answer headers and body. */
export type PosterLimits = Pick<
  WebhookConfig,
  'maxInFlightPerReceiver' | 'maxAnswerBytes' | 'allowPrivateAddresses'
> & { timeoutMs: number };

/** What an attempt fails with when its time runs out. */
export const timedOut = Object.assign(new Error('the attempt timed out'), { name: 'TimeoutError' });
/** The reason an attempt logs when the receiver's address is private and that is not allowed. */
export const PRIVATE_ADDRESS = 'private address refused';
const privateAddress = () => Object.assign(new Error(PRIVATE_ADDRESS), { code: PRIVATE_ADDRESS });
const endedEarly = () => Object.assign(new Error('the answer ended early'), { code: 'ECONNRESET' });

/**
 * POSTs to one receiver over undici's keep-alive pool, TLS verified, no redirects. An attempt
 * ends by `maxAnswerBytes` or `timeoutMs` at most: an endless answer costs a few KiB.
 * undici is loaded with the first receiver: a process without one never reads its 1 MB.
 */
export class WebhookPoster {
  private readonly pool: Promise<Pool>;
  private readonly path: string;
  private readonly authorization: Record<string, string>;

  constructor(
    url: URL,
    private readonly limits: PosterLimits,
  ) {
    this.pool = import('undici').then(
      (undici) =>
        new undici.Pool(url.origin, {
          // Attempts past these connections wait in undici's queue.
          connections: limits.maxInFlightPerReceiver,
          connect: connector(undici.buildConnector, limits),
          headersTimeout: limits.timeoutMs,
          bodyTimeout: limits.timeoutMs,
        }),
    );
    this.path = `${url.pathname}${url.search}`;
    this.authorization = basicAuthorization(url);
  }

  async post(headers: Record<string, string>, body: string, signal: AbortSignal) {
    const attempt = new AbortController();
    const stop = () => attempt.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    const timer = setTimeout(() => attempt.abort(timedOut), this.limits.timeoutMs);
    try {
      const pool = await this.pool;
      const answer = await pool.request({
        method: 'POST',
        path: this.path,
        headers: { ...headers, ...this.authorization },
        body,
        signal: attempt.signal,
      });
      const cut = await readAtMost(answer.body, this.limits.maxAnswerBytes);
      const retryAfter = answer.headers['retry-after'];
      return { status: answer.statusCode, retryAfter: [retryAfter].flat()[0], cut };
    } catch (error) {
      throw (error as { code?: unknown }).code === 'UND_ERR_SOCKET' ? endedEarly() : error;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    }
  }

  async close(): Promise<void> {
    await (await this.pool).destroy();
  }
}

/** Reads the answer to its end, or to `maxBytes` and then drops it (true: it was cut). */
async function readAtMost(body: AsyncIterable<Buffer> & { destroy(): void }, maxBytes: number) {
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      body.destroy();
      return true;
    }
  }
  return false;
}

/** Credentials of the URL's userinfo, sent as Basic (as node:http did with `auth`). */
function basicAuthorization(url: URL): Record<string, string> {
  if (url.username === '' && url.password === '') return {};
  const user = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return { authorization: `Basic ${Buffer.from(user).toString('base64')}` };
}

/** Checks the address where the socket opens: DNS cannot point POSTs at a private one. */
function connector(build: typeof buildConnector, limits: PosterLimits): buildConnector.connector {
  // Verified even when NODE_TLS_REJECT_UNAUTHORIZED=0: a private CA goes in NODE_EXTRA_CA_CERTS.
  const tls = { timeout: limits.timeoutMs, rejectUnauthorized: true };
  if (limits.allowPrivateAddresses) return build(tls);
  const connect = build({ ...tls, lookup: publicOnlyLookup });
  // An IP literal ("[::1]" as a URL writes it counts) is checked here, as no lookup is made.
  return (options, callback) => {
    if (isPrivateAddress(options.hostname)) callback(privateAddress(), null);
    else connect(options, callback);
  };
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback) {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    if (addresses.some((a) => isPrivateAddress(a.address))) return callback(privateAddress(), []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}
