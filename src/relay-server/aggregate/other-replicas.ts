import type { JsonRpcResponse } from '../json-rpc/json-rpc.js';

/** One request to one MCP server of an agent, through the replica that has it up. */
export interface ReplicaRequest {
  /** The replica's address, as `serversElsewhere` named it. */
  peer: string;
  client: string;
  agent: string;
  server: string;
  message: Record<string, unknown>;
  signal: AbortSignal;
}

/**
 * The agent's MCP servers that are up only on the connections of other relay replicas, and a
 * way to ask them. The cluster provides it; without Redis there are no other replicas, so
 * the aggregate endpoint offers what is up here.
 */
export abstract class OtherReplicas {
  /** `agent`'s servers up on other replicas and on no connection here, each with one replica. */
  abstract serversElsewhere(agent: string): Promise<Map<string, string>>;
  /** The server's answer, or a JSON-RPC error when that replica did not give one. */
  abstract send(request: ReplicaRequest): Promise<JsonRpcResponse>;
}
