import { finished } from 'node:stream/promises';
import type { Response } from 'express';
import { request } from 'undici';
import { refusedConnection, type RequestOptions } from './peer-agents.js';

// `headersTimeout`: the peer times requests out itself, so its headers are due by then;
// `signal` cuts the exchange when the peer is found frozen (it ends as lost).
export type PeerCall = RequestOptions & { url: URL; signal: AbortSignal };

// `refused`: nothing reached the peer (safe to send elsewhere); `distrusted`: it refused our
// signature (the secret just changed); `client_gone`: our client hung up, no sign about the peer.
export type PeerOutcome =
  | 'answered'
  | 'refused'
  | 'distrusted'
  | 'lost_before_answer'
  | 'lost_while_answering'
  | 'client_gone';

const NOT_PASSED_BACK = new Set(['connection', 'keep-alive', 'transfer-encoding']);

// A reverse proxy for one request, streamed as it comes. A client hang-up closes the peer request
// so the peer cancels the work; a peer lost mid-answer leaves the response open for an error event.
export async function requestPeer(call: PeerCall, response: Response): Promise<PeerOutcome> {
  const hungUp = new AbortController();
  const onClose = () => {
    if (!response.writableFinished) hungUp.abort();
  };
  response.once('close', onClose);
  try {
    const { url, signal, ...options } = call;
    const answer = await request(url, {
      ...options,
      // An event stream may stay quiet for as long as its client keeps it.
      bodyTimeout: 0,
      signal: AbortSignal.any([signal, hungUp.signal]),
    });
    // The client was authenticated here: a 401 can only be about our signature.
    if (answer.statusCode === 401) {
      answer.body.on('error', () => undefined).resume();
      return 'distrusted';
    }
    response.status(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !NOT_PASSED_BACK.has(name)) response.setHeader(name, value);
    }
    // An event stream's headers go at once: the client waits for them before any event.
    response.flushHeaders();
    answer.body.pipe(response, { end: false });
    await finished(answer.body);
    response.end();
    return 'answered';
  } catch (error) {
    if (hungUp.signal.aborted) return 'client_gone';
    if (response.headersSent) return 'lost_while_answering';
    return refusedConnection(error) ? 'refused' : 'lost_before_answer';
  } finally {
    response.off('close', onClose);
  }
}
