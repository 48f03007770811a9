import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResponse,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import { truncateForLog } from '../common/logging/truncate-for-log.js';
import {
  decodeFrame,
  DEFAULT_FRAME_LIMITS,
  depthExceeds,
  type FrameLimits,
} from './frame-codec.js';

/** The agent ↔ server WebSocket's frames (docs/agent-protocol.md): `hello`, `inventory`, `rpc`. */
export const CONNECT_PATH = '/agent/v1/connect';

/** JSON-RPC error codes of the relay itself (the MCP servers' own codes pass unchanged). */
export const RelayErrorCode = {
  /** Unknown server, or not running (stopped, restarting, removed, exited mid-request). */
  ServerUnavailable: -32001,
  /** No answer from the MCP server within the relay's request timeout. */
  RequestTimeout: -32003,
  /** A request, or its MCP server's answer, over the limits or not encodable: dropped. */
  MessageRejected: -32004,
  /** More relayed requests in flight than the agent keeps; the request was not sent. */
  TooManyRequests: -32005,
  /** An MCP server's request for its client with no client (or several) in flight on it. */
  NoClient: -32006,
  /** The frame's message is not a JSON-RPC 2.0 request or notification. */
  InvalidRequest: -32600,
} as const;

/**
 * Where the agent notes, on an MCP server's answer, the client capabilities the server asked for
 * during that request and the client had not declared (`{ "sampling": {} }`).
 */
export const MISSING_CAPABILITIES_META = 'io.plantstore/missingClientCapabilities';

export type ProtocolServerState = 'starting' | 'up' | 'down';

/** A tool as the agent's server sees it in `hello` and `inventory`. */
export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: unknown;
}

/** The agent's view of one MCP server (its supervisor's), as toProtocolServers reads it. */
export interface AgentServerView {
  name: string;
  state: ProtocolServerState | 'crash-looping';
  tools: readonly McpToolInfo[];
}

export interface ProtocolServer {
  name: string;
  state: ProtocolServerState;
  tools: McpToolInfo[];
}

export interface RpcFrame {
  type: 'rpc';
  server: string;
  message: JSONRPCMessage;
  /** On an MCP server's request to its client: the server's request it was made during. */
  relatedRequestId?: string | number;
  /** On a notification of a client's own process (a per-client server): that client. */
  client?: ClientTag;
}

/** A request's client session: its MCP server may ask only a capable one with a request open. */
export type ClientTag = NonNullable<z.infer<typeof clientTag>>;

/** W3C trace context beside a request in an `rpc` frame: the agent's span continues it. */
export type TraceContext = NonNullable<z.infer<typeof traceContext>>;

/** What the agent sends: `hello` once connected, `inventory` on a change, then `rpc`. */
export type AgentFrame =
  | { type: 'hello'; agent: { id: string; version: string }; servers: ProtocolServer[] }
  | { type: 'inventory'; servers: ProtocolServer[] }
  | RpcFrame;

/** `https://host/base` → `wss://host/base/agent/v1/connect`. The token never goes in the URL. */
export function relayUrl(serverUrl: URL): URL {
  const url = new URL(serverUrl.href);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${CONNECT_PATH}`;
  url.hash = '';
  return url;
}

/**
 * `crash-looping` is the agent's detail: the server needs to know it is not up. A tool too
 * deep for a frame is left out, so one absurd schema cannot keep `hello` from being sent.
 */
export function toProtocolServers(
  views: readonly AgentServerView[],
  limits: FrameLimits = DEFAULT_FRAME_LIMITS,
): ProtocolServer[] {
  // hello → servers[] → server → tools[] → tool: the tool sits 5 levels down.
  const toolDepth = limits.maxDepth - 5;
  return views.map((view) => ({
    name: view.name,
    state: view.state === 'crash-looping' ? 'down' : view.state,
    tools: view.tools.filter((tool) => !depthExceeds(tool, toolDepth)),
  }));
}

const jsonRpcId = z.union([z.string(), z.number()]);
const jsonRpcCall = z.looseObject({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  id: jsonRpcId.optional(),
  params: z.record(z.string(), z.unknown()).optional(),
});

/** The W3C sizes: a traceparent is 55 characters, a tracestate at most 32 members of 256. */
const traceContext = z
  .object({
    traceparent: z.string().max(55).optional(),
    tracestate: z.string().max(8192).optional(),
  })
  .optional()
  // A malformed trace context is left out, never a reason to refuse the request.
  .catch(undefined);

const clientTag = z
  .object({
    // The client as the relay authenticated it: a RELAY_CLIENTS name or `oauth:<subject>`.
    name: z.string().min(1).max(512).optional(),
    session: z.string().min(1).max(256).optional(),
    // The client's `sampling`, `elicitation` and `roots` capabilities from its initialize.
    capabilities: z.record(z.string(), z.unknown()).optional(),
  })
  .optional()
  // Without a readable tag the request is still served; the MCP server just cannot ask it.
  .catch(undefined);

const rpcFrame = z.object({
  type: z.literal('rpc'),
  server: z.string().min(1),
  message: z.record(z.string(), z.unknown()),
  trace: traceContext,
  client: clientTag,
});

const jsonRpcAnswer = z.looseObject({ jsonrpc: z.literal('2.0'), id: jsonRpcId });

type ParsedRpc<K, M> = { kind: K; server: string; message: M; client: ClientTag | undefined };

export type ParsedServerFrame =
  | (ParsedRpc<'request', JSONRPCRequest> & { trace: TraceContext | undefined })
  | ParsedRpc<'notification', JSONRPCNotification>
  /** A client's answer to a request its MCP server sent it. */
  | ParsedRpc<'response', JSONRPCResponse>
  /** A malformed or oversized message that still has an id: it deserves a JSON-RPC error. */
  | { kind: 'invalid-request'; server: string; id: string | number; code: number; reason: string }
  | { kind: 'ignored'; reason: string };

/** Parses one text frame from the server, within the protocol's limits. Never throws. */
export function parseServerFrame(
  text: string,
  limits: FrameLimits = DEFAULT_FRAME_LIMITS,
): ParsedServerFrame {
  const decoded = decodeFrame(text, limits);
  if (!decoded.ok) {
    // Too deep but parsed: the request it carries (if any) is still answered.
    const target = shallowRequestTarget(decoded.value);
    return target
      ? {
          ...target,
          kind: 'invalid-request',
          code: RelayErrorCode.MessageRejected,
          reason: `message rejected: ${decoded.reason}`,
        }
      : { kind: 'ignored', reason: decoded.reason };
  }
  const json = decoded.value;
  const frame = rpcFrame.safeParse(json);
  if (!frame.success) {
    const type = (json as { type?: unknown } | null)?.type;
    return {
      kind: 'ignored',
      reason:
        type === 'rpc'
          ? 'rpc frame without server or message'
          : `unknown frame type ${typeof type === 'string' ? JSON.stringify(truncateForLog(type, 64)) : truncateForLog(type)}`,
    };
  }
  const { server, message, trace, client } = frame.data;
  const call = jsonRpcCall.safeParse(message);
  const answer = jsonRpcAnswer.safeParse(message);
  if (!call.success && answer.success && ('result' in message || 'error' in message)) {
    return { kind: 'response', server, message: answer.data as JSONRPCResponse, client };
  }
  if (!call.success) {
    const id = jsonRpcId.safeParse(message.id);
    return id.success
      ? {
          kind: 'invalid-request',
          server,
          id: id.data,
          code: RelayErrorCode.InvalidRequest,
          reason: 'not a JSON-RPC 2.0 request',
        }
      : { kind: 'ignored', reason: 'message is not a JSON-RPC 2.0 request or notification' };
  }
  return call.data.id === undefined
    ? { kind: 'notification', server, message: call.data, client }
    : { kind: 'request', server, message: call.data as JSONRPCRequest, trace, client };
}

/** `server` and `message.id` of an rpc frame, read without walking the rest of it. */
function shallowRequestTarget(value: unknown): { server: string; id: string | number } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { type, server, message } = value as Record<string, unknown>;
  if (type !== 'rpc' || typeof server !== 'string' || server === '') return undefined;
  if (typeof message !== 'object' || message === null) return undefined;
  const id = jsonRpcId.safeParse((message as Record<string, unknown>).id);
  return id.success ? { server, id: id.data } : undefined;
}

export function rpcError(id: string | number, code: number, message: string): JSONRPCResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}
