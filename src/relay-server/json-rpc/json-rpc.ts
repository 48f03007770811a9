import { stringifyJson } from '../../common/json/lossless-json.js';

// The few JSON-RPC 2.0 shapes the relay builds itself; everything else passes through. An id
// is a bigint when the client's integer is past 2^53 (exact-ids.ts).
export type JsonRpcId = string | number | bigint;

/** A JSON-RPC message (or one of its members) as an object whose keys are not known yet. */
export type Message = Record<string, unknown>;

export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export function jsonRpcError(
  id: JsonRpcId | null,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined && { data }) } };
}

export const JsonRpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  /** JSON-RPC's conventional "request cancelled" (as in LSP). */
  RequestCancelled: -32800,
  /** Too many requests in flight (the relay's own code, in the implementation-defined range). */
  Overloaded: -32005,
} as const;

export function cancelledError(id: JsonRpcId | null): JsonRpcResponse {
  return jsonRpcError(id, JsonRpcCode.RequestCancelled, 'request cancelled by the client');
}

/** The key of a client's id in a map of requests: the id as the client wrote it. */
export function idKey(id: unknown): string {
  return typeof id === 'bigint' ? id.toString() : String(JSON.stringify(id));
}

/** `JSON.stringify` for speed; a bigint id, which it refuses, falls back to the lossless writer. */
export function stringifyMessage(message: unknown): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return stringifyJson(message);
  }
}

export function isObject(value: unknown): value is Message {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A message's id when it has a valid one, else null (notifications, malformed ids). */
export function idOf(message: unknown): JsonRpcId | null {
  if (!isObject(message)) return null;
  const id = message.id;
  return typeof id === 'string' ||
    typeof id === 'bigint' ||
    (typeof id === 'number' && Number.isFinite(id))
    ? id
    : null;
}
