import type { JSONRPCRequest } from '@modelcontextprotocol/client';
import type { TraceContext } from '../../agent-protocol/relay-protocol.js';
import { mcpSpan } from '../../common/tracing/mcp-attributes.js';
import type { ClientSpan } from '../../common/tracing/otel.js';
import { tracing } from '../../common/tracing/tracing.js';

/** A relayed request's span, ended with its answer. */
export type CallSpan = Pick<ClientSpan, 'end'>;

/** A relayed call's CLIENT span, its context passed on in `params._meta` (MCP's SEP-414). */
export function startCallSpan(
  server: string,
  message: JSONRPCRequest,
  trace: TraceContext | undefined,
): { span?: CallSpan; message: JSONRPCRequest } {
  const otel = tracing();
  if (!otel) return { message };
  const { name, attributes } = mcpSpan(message);
  const span = otel.startClientSpan(
    name,
    { ...attributes, 'plant_store.mcp_server': server },
    trace,
  );
  const params = message.params ?? {};
  const meta = { ...(params._meta ?? {}), ...span.carrier };
  return { span, message: { ...message, params: { ...params, _meta: meta } } };
}
