import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/client';
import { request } from 'undici';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';
import { readAtMost } from '../auth/oauth/capped-fetch.js';
import {
  cancelledError,
  isObject,
  jsonRpcError,
  type JsonRpcResponse,
  type Message,
  parseJsonOrUndefined,
} from '../json-rpc/json-rpc.js';
import { metaOf, MODERN_VERSION } from '../mcp/stateless/stateless-wire.js';
import { nameHeader } from '../mcp/stateless/standard-headers.js';
import { refusedConnection, type RequestOptions } from './peer-agents.js';

// The aggregate endpoint's way to a server up only on another replica: a 2026-07-28 (stateless)
// POST, whose answer is read whole and comes back as a 2025 answer.

/** Fields a 2026-07-28 result carries that a 2025 one does not (stateless-wire.ts). */
const STATELESS_RESULT_FIELDS = ['resultType', 'ttlMs', 'cacheScope'];

/** undici's request options; `maxBytes` of the answer kept at most, past them `too_large`. */
export type PeerPost = RequestOptions & {
  url: URL;
  signal: AbortSignal;
  timeoutMs: number;
  maxBytes: number;
};

/** The peer's status and body (JSON, or undefined when it is not), or why there is none. */
export type PeerReply =
  | { status: number; body: unknown }
  | { failed: 'refused' | 'timeout' | 'too_large' | 'lost' | 'aborted' };

/** Sends `post` and reads the whole answer within its bounds (a cut one closes the socket). */
export async function postToPeer(post: PeerPost): Promise<PeerReply> {
  const { url, signal, timeoutMs, maxBytes, ...options } = post;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const either = AbortSignal.any([signal, timeout]);
    const answer = await request(url, { ...options, method: 'POST', signal: either });
    const body = await readAtMost(answer.body, maxBytes);
    if (!body) return { failed: 'too_large' };
    return { status: answer.statusCode, body: parseJsonOrUndefined(body.toString('utf8')) };
  } catch (error) {
    if (signal.aborted) return { failed: 'aborted' };
    if (timeout.aborted) return { failed: 'timeout' };
    return { failed: refusedConnection(error) ? 'refused' : 'lost' };
  }
}

/** The standard headers of the 2026-07-28 request (standard-headers.ts), credentials apart. */
export function statelessHeaders(message: Message): Record<string, string> {
  const name = nameHeader(message);
  return {
    'content-type': 'application/json',
    accept: 'application/json',
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': String(message.method),
    ...(name !== undefined && { 'mcp-name': name }),
  };
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
    return unreachable(server, reply.failed, reply.failed === 'timeout');
  }
  const body = reply.body;
  const error = isObject(body) ? body.error : undefined;
  const wellFormed = isObject(error)
    ? typeof error.code === 'number' && typeof error.message === 'string'
    : error === undefined && isObject(body) && isObject(body.result);
  if (!isObject(body) || !wellFormed) return unreachable(server, `HTTP ${reply.status}`);
  if (error !== undefined) return body as unknown as JsonRpcResponse;
  const result = { ...(body.result as Message) };
  for (const field of STATELESS_RESULT_FIELDS) delete result[field];
  return { jsonrpc: '2.0', id: null, result };
}

export function outcomeOf(reply: PeerReply): string | undefined {
  if (!('failed' in reply)) return 'answered';
  if (reply.failed === 'aborted') return undefined;
  return reply.failed === 'refused' ? 'refused' : 'lost_before_answer';
}

function unreachable(server: string, why: string, timedOut = false): JsonRpcResponse {
  const code = timedOut ? RelayErrorCode.RequestTimeout : RelayErrorCode.ServerUnavailable;
  const message = `MCP server "${server.slice(0, 64)}" is up on another relay replica, which did not answer (${why})`;
  return jsonRpcError(null, code, message);
}
