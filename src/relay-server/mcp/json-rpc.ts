/** The few JSON-RPC 2.0 shapes the relay builds itself; everything else passes through. */
export type JsonRpcId = string | number;

export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export function jsonRpcError(id: JsonRpcId | null, code: number, message: string): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

export const JsonRpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  /** Too many requests in flight (the relay's own code, in the implementation-defined range). */
  Overloaded: -32005,
} as const;
