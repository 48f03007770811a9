import type { Response } from 'express';
import {
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  stringifyMessage,
} from '../../json-rpc/json-rpc.js';
import type { StreamBudget } from '../streams/stream-budget.js';
import { RelayErrorCode } from '../../../agent-protocol/relay-protocol.js';

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
  /** A 2026 retry's replica tag (in its `requestState`): the replica holding its call. */
  heldBy?: string | undefined;
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

/** Writes an answer; with `charged`, its bytes count in the client's StreamBudget until sent. */
export function writeAnswer(
  response: Response,
  answer: RelayAnswer,
  charged?: { budget: StreamBudget; client: string },
): void {
  if (response.destroyed) return;
  response.status(answer.status);
  if (answer.sessionId) response.setHeader('Mcp-Session-Id', answer.sessionId);
  for (const [name, value] of Object.entries(answer.headers ?? {})) response.setHeader(name, value);
  if (answer.body === undefined) {
    response.end();
    return;
  }
  response.setHeader('Content-Type', 'application/json');
  const body = Buffer.from(stringifyMessage(answer.body));
  if (!charged) {
    response.end(body);
    return;
  }
  let held = body.length;
  charged.budget.charge(charged.client, held);
  const release = () => {
    charged.budget.release(charged.client, held);
    held = 0;
  };
  response.once('close', release);
  response.end(body, release);
}
