import { type Agent as HttpAgent, request as httpRequest } from 'node:http';
import { type Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** One JSON POST from this replica to another, whose answer this replica reads itself. */
export interface PeerPost {
  url: URL;
  headers: Record<string, string>;
  body: string;
  agents: { http: HttpAgent; https: HttpsAgent };
  /** The whole exchange, headers and body, ends by then. */
  timeoutMs: number;
  /** Bytes of the answer kept at most; a longer answer ends the exchange as `too_large`. */
  maxBytes: number;
  signal: AbortSignal;
}

/**
 * The peer's status and body (JSON, or undefined when it is not), or why there is none:
 * `refused` (nothing reached the peer), `timeout`, `too_large`, `lost` (it went away mid-way),
 * `aborted` (the caller's signal).
 */
export type PeerReply =
  | { status: number; body: unknown }
  | { failed: 'refused' | 'timeout' | 'too_large' | 'lost' | 'aborted' };

/** Sends `post` and reads the whole answer, within its time and size bounds. */
export function postToPeer(post: PeerPost): Promise<PeerReply> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (reply: PeerReply) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      post.signal.removeEventListener('abort', onAbort);
      // A whole answer leaves the connection to the keep-alive pool; anything else closes it.
      if ('failed' in reply) outgoing.destroy();
      resolve(reply);
    };
    const secure = post.url.protocol === 'https:';
    const outgoing = (secure ? httpsRequest : httpRequest)(post.url, {
      method: 'POST',
      headers: post.headers,
      agent: secure ? post.agents.https : post.agents.http,
    });
    const timer = setTimeout(() => settle({ failed: 'timeout' }), post.timeoutMs);
    const onAbort = () => settle({ failed: 'aborted' });
    post.signal.addEventListener('abort', onAbort, { once: true });
    outgoing.on('error', (error: Error & { code?: string }) =>
      settle({ failed: error.code === 'ECONNREFUSED' ? 'refused' : 'lost' }),
    );
    outgoing.on('response', (incoming) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      incoming.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > post.maxBytes) settle({ failed: 'too_large' });
        else chunks.push(chunk);
      });
      incoming.on('error', () => settle({ failed: 'lost' }));
      incoming.on('end', () =>
        settle({ status: incoming.statusCode ?? 502, body: parsed(Buffer.concat(chunks)) }),
      );
    });
    if (post.signal.aborted) onAbort();
    else outgoing.end(post.body);
  });
}

function parsed(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
