import type { ClientTag } from '../../agent-protocol/relay-protocol.js';
import type { RequestNotificationSink } from '../agents/agent-connection.js';
import type { AggregateService } from './aggregate/aggregate.service.js';
import type { JsonRpcResponse } from '../json-rpc/json-rpc.js';
import type { RelayForwarder } from './relay-forwarder.service.js';
import type { RelaySession } from './session-store.service.js';

/** A request of a session, either revision: to its pinned server, or the aggregate endpoint. */
export function forwardInSession(
  forwarder: RelayForwarder,
  aggregate: AggregateService,
  request: { session: RelaySession; message: Record<string, unknown>; signal: AbortSignal },
  sink?: RequestNotificationSink,
): Promise<JsonRpcResponse> {
  const { session, message, signal } = request;
  const { pinned } = session;
  return forwarder.run(session, message, signal, (cancelled) =>
    pinned
      ? forwarder.send(session.client, pinned.connection, pinned.server, message, cancelled, {
          sink,
          tag: clientTag(session),
        })
      : aggregate.request(session, message, cancelled, sink),
  );
}

/** Who the agent may ask on behalf of the MCP server while this request is in flight. */
export function clientTag({ id, client, capabilities }: RelaySession): ClientTag {
  return capabilities ? { name: client, session: id, capabilities } : { name: client, session: id };
}
