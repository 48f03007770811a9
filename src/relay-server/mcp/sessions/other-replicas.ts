import type { Response } from 'express';
import type { ClientRequest } from '../../auth/client-request.js';
import type { JsonRpcResponse } from '../../json-rpc/json-rpc.js';
import type { RelayAnswer, RelayTarget } from './relay-target.js';

export interface ReplicaRequest {
  /** The replica's address, as `serversElsewhere` named it. */
  peer: string;
  client: string;
  agent: string;
  server: string;
  message: Record<string, unknown>;
  signal: AbortSignal;
}

/** The one way to the other replicas (cluster/ implements it); without Redis there are none. */
export abstract class OtherReplicas {
  /** `agent`'s servers up on other replicas and on no connection here, each with one replica. */
  abstract serversElsewhere(agent: string): Promise<Map<string, string>>;
  abstract send(request: ReplicaRequest): Promise<JsonRpcResponse>;
  /** True when answered here (passed to a peer, or refused); false when this replica serves it. */
  abstract handled(
    request: ClientRequest,
    response: Response,
    target: RelayTarget,
    message?: unknown,
  ): Promise<boolean>;
  abstract recorded(sessionId: string, target: RelayTarget): Promise<boolean>;
  /** This replica's short opaque name in MRTR request states; '' without Redis. */
  abstract replicaTag(): string;
  abstract unavailable(message: unknown): RelayAnswer & { headers: Record<string, string> };
}
