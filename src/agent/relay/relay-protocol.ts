import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResponse,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import type { McpServerView } from '../mcp/mcp-supervisor.js';
import type { McpToolInfo } from '../mcp/mcp-server-status.js';

/**
 * The frames of the agent ↔ server WebSocket (docs/agent-protocol.md). Every frame is one JSON
 * text message with a `type`. The agent speaks first (`hello`), keeps the server's picture of
 * its MCP servers current (`inventory`), and carries JSON-RPC both ways inside `rpc` frames.
 */
export const CONNECT_PATH = '/agent/v1/connect';

/** JSON-RPC error codes of the relay itself (the MCP servers' own codes pass unchanged). */
export const RelayErrorCode = {
  /** Unknown server, or not running (stopped, restarting, removed, exited mid-request). */
  ServerUnavailable: -32001,
  /** No answer from the MCP server within the relay's request timeout. */
  RequestTimeout: -32003,
  /** The frame's message is not a JSON-RPC 2.0 request or notification. */
  InvalidRequest: -32600,
} as const;

export type ProtocolServerState = 'starting' | 'up' | 'down';

export interface ProtocolServer {
  name: string;
  state: ProtocolServerState;
  tools: McpToolInfo[];
}

export interface HelloFrame {
  type: 'hello';
  agent: { id: string; version: string };
  servers: ProtocolServer[];
}

export interface InventoryFrame {
  type: 'inventory';
  servers: ProtocolServer[];
}

export interface RpcFrame<M extends JSONRPCMessage = JSONRPCMessage> {
  type: 'rpc';
  server: string;
  message: M;
}

export type AgentFrame =
  HelloFrame | InventoryFrame | RpcFrame<JSONRPCResponse | JSONRPCNotification>;

/** `https://host/base` → `wss://host/base/agent/v1/connect`. The token never goes in the URL. */
export function relayUrl(serverUrl: URL): URL {
  const url = new URL(serverUrl.href);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${CONNECT_PATH}`;
  url.hash = '';
  return url;
}

/** `crash-looping` is an agent-side detail; the server only needs to know it is not up. */
export function toProtocolServers(views: readonly McpServerView[]): ProtocolServer[] {
  return views.map((view) => ({
    name: view.name,
    state: view.state === 'crash-looping' ? 'down' : view.state,
    tools: view.tools.map((tool) => ({ ...tool })),
  }));
}

const jsonRpcId = z.union([z.string(), z.number()]);
const jsonRpcCall = z.looseObject({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  id: jsonRpcId.optional(),
  params: z.record(z.string(), z.unknown()).optional(),
});

const rpcFrame = z.object({
  type: z.literal('rpc'),
  server: z.string().min(1),
  message: z.record(z.string(), z.unknown()),
});

export type ParsedServerFrame =
  | { kind: 'request'; server: string; message: JSONRPCRequest }
  | { kind: 'notification'; server: string; message: JSONRPCNotification }
  /** A malformed message that still has an id: it deserves a JSON-RPC error answer. */
  | { kind: 'invalid-request'; server: string; id: string | number; reason: string }
  | { kind: 'ignored'; reason: string };

/** Parses one text frame from the server. Never throws. */
export function parseServerFrame(text: string): ParsedServerFrame {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { kind: 'ignored', reason: 'frame is not JSON' };
  }
  const frame = rpcFrame.safeParse(json);
  if (!frame.success) {
    const type = (json as { type?: unknown } | null)?.type;
    return {
      kind: 'ignored',
      reason:
        type === 'rpc'
          ? 'rpc frame without server or message'
          : `unknown frame type ${JSON.stringify(type)}`,
    };
  }
  const { server, message } = frame.data;
  const call = jsonRpcCall.safeParse(message);
  if (!call.success) {
    const id = jsonRpcId.safeParse(message.id);
    return id.success
      ? { kind: 'invalid-request', server, id: id.data, reason: 'not a JSON-RPC 2.0 request' }
      : { kind: 'ignored', reason: 'message is not a JSON-RPC 2.0 request or notification' };
  }
  return call.data.id === undefined
    ? { kind: 'notification', server, message: call.data }
    : { kind: 'request', server, message: call.data as JSONRPCRequest };
}

export function rpcError(id: string | number, code: number, message: string): JSONRPCResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}
