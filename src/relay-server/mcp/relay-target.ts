import {
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
} from '../json-rpc/json-rpc.js';
import { RelayErrorCode } from '../../agent-protocol/relay-protocol.js';

export interface RelayAnswer {
  status: number;
  sessionId?: string;
  body?: JsonRpcResponse;
  headers?: Record<string, string>;
}

export interface RelayTarget {
  client: string;
  agent: string;
  /** Undefined for the agent's aggregate endpoint (`/mcp/<agent>`). */
  server: string | undefined;
  sessionId: string | undefined;
}

/** Over a cap is HTTP 429 (with the JSON-RPC error as body), so HTTP-aware clients back off. */
export function answerOf(body: JsonRpcResponse, status = 200): RelayAnswer {
  return body.error?.code === JsonRpcCode.Overloaded
    ? { status: 429, body, headers: { 'Retry-After': '1' } }
    : { status, body };
}

export function invalidRequest(id: JsonRpcId | null, reason: string): RelayAnswer {
  return { status: 400, body: jsonRpcError(id, JsonRpcCode.InvalidRequest, reason) };
}

export function notUp(id: JsonRpcId | null, agent: string, server: string): JsonRpcResponse {
  return jsonRpcError(
    id,
    RelayErrorCode.ServerUnavailable,
    `MCP server "${server.slice(0, 64)}" of agent "${agent}" is not available (agent not connected, or the server is not up)`,
  );
}
