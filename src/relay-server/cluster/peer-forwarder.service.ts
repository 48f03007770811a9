import { Inject, Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import type { ClientRequest } from '../auth/client-request.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { PeerDispatcher } from './peer-agents.js';
import {
  idOf,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  stringifyMessage,
} from '../json-rpc/json-rpc.js';
import { encodeEvent } from '../mcp/streams/lazy-event-stream.js';
import { type RelayAnswer, type RelayTarget, writeAnswer } from '../mcp/sessions/relay-target.js';
import type { OtherReplicas, ReplicaRequest } from '../mcp/sessions/other-replicas.js';
import { onPeer, passedHeaders } from './peer-headers.js';
import { PEER_PING_PATH } from './peer-ping.controller.js';
import { answerOf, outcomeOf, postToPeer, statelessHeaders, withEnvelope } from './peer-post.js';
import { PeerProbe } from './peer-probe.js';
import { type PeerOutcome, requestPeer } from './peer-request.js';
import { RelayCluster, tagOf } from './relay-cluster.service.js';

/** Why a client is asked to retry in a moment (503 + Retry-After). */
const RETRY_LATER = {
  unavailable: 'the relay cannot reach its shared state (Redis); retry later',
  waiting: "the session's agent is not connected to a live relay replica (yet); retry later",
  // A peer refused our signature: Redis came back empty and the replicas share a new secret.
  resyncing: 'the relay replicas are agreeing on a new shared state; retry',
};
type RetryLater = RelayAnswer & { headers: Record<string, string> };
const PEER_LOST = 'the relay replica serving this request went away; retry';

// Passes a request that belongs to another replica there (over RELAY_PORT), signed for the client
// authenticated here, or answers 503 + Retry-After while the shared state is unreachable.
@Injectable()
export class PeerForwarder implements OtherReplicas {
  private readonly log: RateLimitedLog;
  private readonly probe: PeerProbe;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) logger: Logger,
    private readonly cluster: RelayCluster,
    private readonly dispatcher: PeerDispatcher,
    @InjectMetric('relay_forwarded_requests_total') private readonly forwarded: Counter<'outcome'>,
    @InjectMetric('relay_redis_refusals_total') private readonly refusals: Counter,
    @InjectMetric('relay_unresponsive_peers_total') unresponsive: Counter,
  ) {
    this.log = new RateLimitedLog(logger);
    this.probe = new PeerProbe({
      requestTimeoutMs: config.requestTimeoutMs,
      pingTimeoutMs: config.agentProbeTimeoutMs,
      pingUrl: (peer) => onPeer(peer, `${config.basePath}/${PEER_PING_PATH}`),
      pingHeaders: (url) => this.cluster.peerCredentials('GET', url),
      dispatcher,
      onFrozen: (peer, cut) => {
        this.cluster.suspect(peer);
        unresponsive.inc();
        this.log.warn(
          { peer, cut },
          'a replica answers no ping: out of rotation, its requests cut',
        );
      },
    });
  }

  /** True when answered here (passed to a peer, or refused); false when this replica serves it. */
  async handled(
    request: ClientRequest,
    response: Response,
    target: RelayTarget,
    message?: unknown,
  ): Promise<boolean> {
    if (!this.cluster.enabled) return false;
    if (request.fromPeer) {
      const placement = await this.cluster.placeForPeer(target);
      return placement.kind !== 'here' && this.refused(response, placement.kind, message);
    }
    const hungUp = new AbortController();
    // Only a hang-up aborts: an abort builds a DOMException, too dear for every answered call.
    response.once('close', () => response.writableFinished || hungUp.abort());
    // A peer that refused the connection got nothing: the request (a session's too: it moves
    // off that replica) may go to another one.
    for (let attempt = 0; attempt < 3; attempt++) {
      const placement = await this.cluster.place(target, hungUp.signal);
      if (hungUp.signal.aborted) return true;
      if (placement.kind === 'here') return false;
      if (placement.kind !== 'peer') return this.refused(response, placement.kind, message);
      const outcome = await this.forward(placement.url, request, response, message);
      this.forwarded.inc({ outcome });
      if (outcome === 'answered' || outcome === 'client_gone') return true;
      if (outcome === 'distrusted') {
        this.cluster.refreshSoon();
        return this.refused(response, 'resyncing', message);
      }
      this.log.warn({ agent: target.agent, outcome }, 'the replica serving a request went away');
      if (outcome !== 'refused') break;
      // A suspect's sessions move, so a live peer must not become one: a refusal counts once
      // the peer's own ping fails too. A frozen one is found by the probe.
      if (!(await this.probe.alive(placement.url))) this.cluster.suspect(placement.url);
    }
    answerLost(response, idOf(message), !response.headersSent);
    return true;
  }

  private refused(response: Response, why: keyof typeof RETRY_LATER, message: unknown): true {
    writeAnswer(
      response,
      why === 'unavailable' ? this.unavailable(message) : retryLater(why, message),
    );
    return true;
  }

  private async forward(
    peer: string,
    request: ClientRequest,
    response: Response,
    message: unknown,
  ): Promise<PeerOutcome> {
    const waiting = this.probe.track(peer, () => response.headersSent);
    const url = onPeer(peer, request.originalUrl);
    const client = request.relayClient;
    const session = request.headers['mcp-session-id'];
    const headers = {
      ...passedHeaders(request.headers),
      ...this.cluster.peerCredentials(request.method, url, {
        client: encodeURIComponent(client?.name ?? ''),
        agents: [...(client?.agents ?? [])].join(','),
        session: typeof session === 'string' ? session : '',
      }),
      ...(request.method === 'POST' && { 'content-type': 'application/json' }),
    };
    try {
      return await requestPeer(
        {
          url,
          method: request.method,
          headers,
          body: message === undefined ? undefined : Buffer.from(stringifyMessage(message)),
          dispatcher: this.dispatcher,
          headersTimeout: this.config.requestTimeoutMs + 5000,
          signal: waiting.signal,
        },
        response,
      );
    } finally {
      waiting.done();
    }
  }

  async recorded(sessionId: string, { client, agent, server }: RelayTarget): Promise<boolean> {
    return this.cluster.recordSession(sessionId, { client, agent, server: server ?? null });
  }

  replicaTag(): string {
    return this.cluster.enabled ? tagOf(this.cluster.replicaUrl) : '';
  }

  serversElsewhere(agent: string): Promise<Map<string, string>> {
    return this.cluster.serversElsewhere(agent);
  }

  /** To the replica where the server is up, signed for this client; `signal` cancels it there. */
  async send(request: ReplicaRequest): Promise<JsonRpcResponse> {
    const { peer, agent, server, message, signal } = request;
    const id = (message.id ?? null) as JsonRpcResponse['id'];
    const path = `${this.config.basePath}/mcp/${encodeURIComponent(agent)}/${encodeURIComponent(server)}`;
    const url = onPeer(peer, path);
    // Only the agent asked for: the peer needs no more of the client's rights.
    const who = { client: encodeURIComponent(request.client), agents: agent, session: '' };
    const reply = await postToPeer({
      url,
      headers: { ...statelessHeaders(message), ...this.cluster.peerCredentials('POST', url, who) },
      body: stringifyMessage(withEnvelope(message)),
      dispatcher: this.dispatcher,
      // The peer answers -32003 itself at the request timeout; this bounds a peer that froze.
      timeoutMs: this.config.requestTimeoutMs + 5000,
      // The peer's answer came to it in one agent frame; twice that leaves room for re-encoding.
      maxBytes: 2 * this.config.maxFrameBytes,
      signal,
    });
    // Only a refused connection proves the peer gone: a slow tool times out on a live peer, and
    // a frozen one stops refreshing its entries, so it leaves the listings within seconds.
    if ('failed' in reply && reply.failed === 'refused') this.cluster.suspect(peer);
    const outcome = outcomeOf(reply);
    if (outcome !== undefined) this.forwarded.inc({ outcome });
    return { ...answerOf(reply, server), id };
  }

  /** 503 + Retry-After: the shared state is unreachable (counted, logged at a limited rate). */
  unavailable(message: unknown): RetryLater {
    this.refusals.inc();
    this.log.warn({}, 'refusing a request: Redis is unreachable');
    return retryLater('unavailable', message);
  }
}

function retryLater(why: keyof typeof RETRY_LATER, message: unknown): RetryLater {
  return {
    status: 503,
    headers: { 'Retry-After': '2' },
    body: jsonRpcError(idOf(message), RelayErrorCode.ServerUnavailable, RETRY_LATER[why]),
  };
}

// The peer died before or while answering: a request is answered -32001 at once (in the event
// stream when one was started), anything else gets 502 or a cut stream.
function answerLost(response: Response, id: JsonRpcId | null, beforeAnswer: boolean): void {
  const error = jsonRpcError(id, RelayErrorCode.ServerUnavailable, PEER_LOST);
  if (beforeAnswer) return writeAnswer(response, { status: id === null ? 502 : 200, body: error });
  if (response.destroyed) return;
  const streaming = String(response.getHeader('content-type') ?? '').includes('event-stream');
  if (streaming && id !== null) response.end(encodeEvent(error));
  else response.destroy();
}
