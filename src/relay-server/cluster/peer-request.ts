import { type Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { type Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Response } from 'express';

/** One client request passed on to the replica that serves it. */
export interface PeerCall {
  url: URL;
  method: string;
  headers: Record<string, string | string[]>;
  body: Buffer | undefined;
  agents: { http: HttpAgent; https: HttpsAgent };
  /** The peer must have sent its answer's headers by then (it times out requests itself). */
  headersTimeoutMs: number;
  /** Cuts the exchange (the peer was found frozen): it ends as lost. */
  signal: AbortSignal;
}

/**
 * How a forwarded request ended: answered; refused (nothing reached the peer: safe to send
 * elsewhere); distrusted (the peer refused our signature: the replicas' secret just changed);
 * the peer went away (or timed out) before or while answering; or our own client
 * hung up first (closed its stream, cancelled), which says nothing about the peer.
 */
export type PeerOutcome =
  | 'answered'
  | 'refused'
  | 'distrusted'
  | 'lost_before_answer'
  | 'lost_while_answering'
  | 'client_gone';

/**
 * A plain reverse proxy for one request: the peer's status, headers and body (an event stream
 * too) are passed to the client as they come, with backpressure. A client that hangs up closes
 * the peer request, so the peer cancels the work. Resolves once the exchange is over.
 */
export function requestPeer(call: PeerCall, response: Response): Promise<PeerOutcome> {
  return new Promise((resolve) => {
    const secure = call.url.protocol === 'https:';
    const send = secure ? httpsRequest : httpRequest;
    const outgoing = send(call.url, {
      method: call.method,
      headers: call.headers,
      agent: secure ? call.agents.https : call.agents.http,
      signal: call.signal,
    });
    outgoing.setTimeout(call.headersTimeoutMs, () => outgoing.destroy(new Error('peer timeout')));
    outgoing.on('response', (incoming) => {
      outgoing.setTimeout(0);
      // The client was authenticated here: a 401 can only be about our signature.
      if (incoming.statusCode === 401) {
        incoming.resume();
        resolve('distrusted');
        return;
      }
      passResponse(incoming, response, resolve);
    });
    outgoing.on('error', (error: Error & { code?: string }) => {
      if (response.headersSent) return;
      resolve(error.code === 'ECONNREFUSED' ? 'refused' : 'lost_before_answer');
    });
    response.once('close', () => {
      if (response.writableFinished) return;
      resolve('client_gone');
      outgoing.destroy();
    });
    outgoing.end(call.body);
  });
}

const NOT_PASSED_BACK = new Set(['connection', 'keep-alive', 'transfer-encoding']);

function passResponse(
  incoming: IncomingMessage,
  response: Response,
  resolve: (outcome: PeerOutcome) => void,
): void {
  response.status(incoming.statusCode ?? 502);
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined && !NOT_PASSED_BACK.has(name)) response.setHeader(name, value);
  }
  // An event stream's headers go at once: the client waits for them before any event.
  response.flushHeaders();
  incoming.pipe(response, { end: false });
  incoming.once('close', () => {
    if (incoming.complete) {
      response.end();
      resolve('answered');
    } else {
      resolve('lost_while_answering');
    }
  });
}
