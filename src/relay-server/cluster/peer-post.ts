import { type Dispatcher, request } from 'undici';
import { readAtMost } from '../auth/oauth/capped-fetch.js';
import { parseJsonOrUndefined } from '../json-rpc/json-rpc.js';
import { refusedConnection } from './peer-agents.js';

export interface PeerPost {
  url: URL;
  headers: Record<string, string>;
  body: string;
  dispatcher: Dispatcher;
  timeoutMs: number;
  /** Bytes of the answer kept at most; a longer answer ends the exchange as `too_large`. */
  maxBytes: number;
  signal: AbortSignal;
}

/** The peer's status and body (JSON, or undefined when it is not), or why there is none. */
export type PeerReply =
  | { status: number; body: unknown }
  | { failed: 'refused' | 'timeout' | 'too_large' | 'lost' | 'aborted' };

/** Sends `post` and reads the whole answer within its bounds (a cut one closes the socket). */
export async function postToPeer(post: PeerPost): Promise<PeerReply> {
  const timeout = AbortSignal.timeout(post.timeoutMs);
  try {
    const answer = await request(post.url, {
      dispatcher: post.dispatcher,
      method: 'POST',
      headers: post.headers,
      body: post.body,
      signal: AbortSignal.any([post.signal, timeout]),
    });
    const body = await readAtMost(answer.body, post.maxBytes);
    if (!body) return { failed: 'too_large' };
    return { status: answer.statusCode, body: parseJsonOrUndefined(body.toString('utf8')) };
  } catch (error) {
    if (post.signal.aborted) return { failed: 'aborted' };
    if (timeout.aborted) return { failed: 'timeout' };
    return { failed: refusedConnection(error) ? 'refused' : 'lost' };
  }
}
