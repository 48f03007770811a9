import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import type { ProtocolServer } from '../../agent/relay/relay-protocol.js';
import { RelayErrorCode } from '../../agent/relay/relay-protocol.js';
import { jsonRpcError, type JsonRpcId, type JsonRpcResponse } from '../mcp/json-rpc.js';

/** JSON-RPC's conventional "request cancelled" code (as in LSP). */
const REQUEST_CANCELLED = -32800;

interface Pending {
  resolve: (response: JsonRpcResponse) => void;
  timer: NodeJS.Timeout;
  server: string;
}

/**
 * One WebSocket of one agent pod, after its token was accepted. It keeps the pod's last
 * inventory and the requests sent to it: each request gets an id of this connection's own
 * (a counter, so ids of different clients never collide on the wire), and every request gets
 * exactly one answer: the agent's, a timeout error, or an error when the connection closes.
 */
export class AgentConnection {
  /** Internal id, for logs and session pinning; never sent anywhere. */
  readonly id = randomUUID();
  agentId: string | undefined;
  version: string | undefined;
  servers: ProtocolServer[] = [];
  private nextRequestId = 1;
  private readonly pending = new Map<number, Pending>();
  private closed = false;

  constructor(
    readonly agent: string,
    private readonly socket: WebSocket,
  ) {}

  get open(): boolean {
    return !this.closed;
  }

  /** True when the pod's last hello/inventory shows `server` up. */
  serves(server: string): boolean {
    return this.servers.some((s) => s.name === server && s.state === 'up');
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Sends a JSON-RPC request for `server`; resolves with the agent's response carrying the
   * relay's id (the caller restores the client's). On timeout the agent is sent
   * `notifications/cancelled` so the MCP server can stop working on it.
   */
  request(
    server: string,
    message: Record<string, unknown>,
    timeoutMs: number,
  ): { id: number; response: Promise<JsonRpcResponse> } {
    const id = this.nextRequestId++;
    const response = new Promise<JsonRpcResponse>((resolve) => {
      if (this.closed) {
        resolve(closedError(id, this.agent));
        return;
      }
      const timer = setTimeout(() => {
        if (!this.pending.delete(id)) return;
        this.notify(server, {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: id, reason: 'relay request timeout' },
        });
        resolve(
          jsonRpcError(
            id,
            RelayErrorCode.RequestTimeout,
            `agent "${this.agent}" did not answer within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.pending.set(id, { resolve, timer, server });
      this.send({ type: 'rpc', server, message: { ...message, jsonrpc: '2.0', id } });
    });
    return { id, response };
  }

  /** Ends a request the client cancelled: its waiter is answered, a late answer is dropped. */
  forget(id: number): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.pending.delete(id);
    pending.resolve(jsonRpcError(id, REQUEST_CANCELLED, 'request cancelled by the client'));
  }

  notify(server: string, message: Record<string, unknown>): void {
    this.send({ type: 'rpc', server, message: { ...message, jsonrpc: '2.0' } });
  }

  /** An `rpc` response frame from the agent. False when no request waits for that id. */
  settle(id: JsonRpcId, message: Record<string, unknown>): boolean {
    if (typeof id !== 'number') return false;
    const pending = this.pending.get(id);
    if (!pending) return false;
    clearTimeout(pending.timer);
    this.pending.delete(id);
    pending.resolve(message as unknown as JsonRpcResponse);
    return true;
  }

  /** The socket closed: every waiting client is answered now, not at its timeout. */
  closedByPeer(): void {
    if (this.closed) return;
    this.closed = true;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.resolve(closedError(id, this.agent));
    }
    this.pending.clear();
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
    this.closedByPeer();
  }

  private send(frame: unknown): void {
    if (this.closed) return;
    // A send failure surfaces as the socket's close event, which answers what is pending.
    this.socket.send(JSON.stringify(frame), () => undefined);
  }
}

function closedError(id: number, agent: string): JsonRpcResponse {
  return jsonRpcError(
    id,
    RelayErrorCode.ServerUnavailable,
    `the connection of agent "${agent}" closed before it answered`,
  );
}
