import type { JsonRpcResponse } from '../json-rpc/json-rpc.js';

/** What a client's HTTP request is answered with. */
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
