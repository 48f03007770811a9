import { Inject, Injectable } from '@nestjs/common';
import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/client';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';
import { OtherReplicas, type ReplicaRequest } from '../mcp/other-replicas.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { PeerDispatcher } from './peer-agents.js';
import {
  cancelledError,
  isObject,
  jsonRpcError,
  type JsonRpcResponse,
  type Message,
  stringifyMessage,
} from '../json-rpc/json-rpc.js';
import { metaOf, MODERN_VERSION } from '../mcp/stateless/stateless-wire.js';
import { nameHeader } from '../mcp/stateless/standard-headers.js';
import { onPeer } from './peer-headers.js';
import { type PeerReply, postToPeer } from './peer-post.js';
import { RelayCluster } from './relay-cluster.service.js';

/** Fields a 2026-07-28 result carries that a 2025 one does not (stateless-wire.ts). */
const STATELESS_RESULT_FIELDS = ['resultType', 'ttlMs', 'cacheScope'];

/**
 * The aggregate endpoint's way to MCP servers up only on other replicas: one 2026-07-28
 * (stateless) request to `<base>/mcp/<agent>/<server>` of such a replica, signed for the client
 * authenticated here, so the peer serves it itself; closing it cancels it there. The answer
 * comes back as a 2025 answer.
 */
@Injectable()
export class PeerMcpClient implements OtherReplicas {
  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    private readonly cluster: RelayCluster,
    private readonly dispatcher: PeerDispatcher,
    @InjectMetric('relay_forwarded_requests_total') private readonly forwarded: Counter<'outcome'>,
  ) {}

  serversElsewhere(agent: string): Promise<Map<string, string>> {
    return this.cluster.serversElsewhere(agent);
  }

  async send(request: ReplicaRequest): Promise<JsonRpcResponse> {
    const { peer, agent, server, message, signal } = request;
    const id = (message.id ?? null) as JsonRpcResponse['id'];
    const path = `${this.config.basePath}/mcp/${encodeURIComponent(agent)}/${encodeURIComponent(server)}`;
    const url = onPeer(peer, path);
    const reply = await postToPeer({
      url,
      headers: this.headers(request, url),
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

  private headers({ message, client, agent }: ReplicaRequest, url: URL): Record<string, string> {
    const name = nameHeader(message);
    // Only the agent asked for: the peer needs no more of the client's rights.
    const who = { client: encodeURIComponent(client), agents: agent, session: '' };
    return {
      'content-type': 'application/json',
      accept: 'application/json',
      'mcp-protocol-version': MODERN_VERSION,
      'mcp-method': String(message.method),
      ...(name !== undefined && { 'mcp-name': name }),
      ...this.cluster.peerCredentials('POST', url, who),
    };
  }
}

/** The 2025 request as a 2026-07-28 one; no client capabilities, as the answer is read whole. */
export function withEnvelope(message: Message): Message {
  const params = isObject(message.params) ? message.params : {};
  const envelope = {
    [PROTOCOL_VERSION_META_KEY]: MODERN_VERSION,
    [CLIENT_CAPABILITIES_META_KEY]: {},
  };
  return { ...message, params: { ...params, _meta: { ...metaOf(message), ...envelope } } };
}

/** The peer's JSON-RPC answer without its 2026 result fields, or an error saying what failed. */
export function answerOf(reply: PeerReply, server: string): JsonRpcResponse {
  if ('failed' in reply) {
    if (reply.failed === 'aborted') return cancelledError(null);
    const code =
      reply.failed === 'timeout' ? RelayErrorCode.RequestTimeout : RelayErrorCode.ServerUnavailable;
    return jsonRpcError(null, code, unreachable(server, reply.failed));
  }
  const body = reply.body;
  const error = isObject(body) ? body.error : undefined;
  const wellFormed = isObject(error)
    ? typeof error.code === 'number' && typeof error.message === 'string'
    : error === undefined && isObject(body) && isObject(body.result);
  if (!isObject(body) || !wellFormed) {
    return jsonRpcError(
      null,
      RelayErrorCode.ServerUnavailable,
      unreachable(server, `HTTP ${reply.status}`),
    );
  }
  if (error !== undefined) return body as unknown as JsonRpcResponse;
  const result = { ...(body.result as Message) };
  for (const field of STATELESS_RESULT_FIELDS) delete result[field];
  return { jsonrpc: '2.0', id: null, result };
}

function outcomeOf(reply: PeerReply): string | undefined {
  if (!('failed' in reply)) return 'answered';
  if (reply.failed === 'aborted') return undefined;
  return reply.failed === 'refused' ? 'refused' : 'lost_before_answer';
}

function unreachable(server: string, why: string): string {
  return `MCP server "${server.slice(0, 64)}" is up on another relay replica, which did not answer (${why})`;
}
