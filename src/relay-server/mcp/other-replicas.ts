import type { Response } from 'express';
import type { ClientRequest } from '../auth/client-request.js';
import type { JsonRpcResponse } from '../json-rpc/json-rpc.js';
import type { RelayAnswer, RelayTarget } from './relay-target.js';

/**
 * The MCP relaying's one way to the other relay replicas. The cluster (cluster/) implements
 * both classes; the relaying never imports it, so without Redis it runs on its own.
 */

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
 * way to ask them. Without Redis there are none: the aggregate endpoint offers what is up here.
 */
export abstract class OtherReplicas {
  /** `agent`'s servers up on other replicas and on no connection here, each with one replica. */
  abstract serversElsewhere(agent: string): Promise<Map<string, string>>;
  /** The server's answer, or a JSON-RPC error when that replica did not give one. */
  abstract send(request: ReplicaRequest): Promise<JsonRpcResponse>;
}

/** Client requests that belong to another replica, and the sessions all replicas can find. */
export abstract class ReplicaRouting {
  /**
   * True when the request was answered here (passed to a peer, or refused while Redis is
   * down); false when this replica serves it. `message` is a POST's parsed body.
   */
  abstract handled(
    request: ClientRequest,
    response: Response,
    target: RelayTarget,
    message?: unknown,
  ): Promise<boolean>;
  /** Whether a new session is recorded where the other replicas find it. */
  abstract recorded(sessionId: string, target: RelayTarget): Promise<boolean>;
  /** 503 + Retry-After: the shared state is unreachable. */
  abstract unavailable(message: unknown): RelayAnswer & { headers: Record<string, string> };
}
