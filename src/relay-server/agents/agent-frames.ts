import { z } from 'zod';
import type { ProtocolServer } from '../../agent-protocol/relay-protocol.js';
import { decodeFrame, type FrameLimits } from '../../agent-protocol/frame-codec.js';

/**
 * The frames an agent sends (docs/agent-protocol.md). An agent is a peer like any other: every
 * field is bounded, and a frame that does not fit is reported invalid, never thrown.
 */

const MAX_SERVERS = 1000;
const MAX_TOOLS = 10_000;

const tool = z.looseObject({
  name: z.string().min(1).max(256),
  description: z.string().optional(),
  inputSchema: z.record(z.string(), z.unknown()).optional(),
});

const server = z.object({
  name: z.string().min(1).max(64),
  state: z.enum(['starting', 'up', 'down']),
  tools: z.array(tool).max(MAX_TOOLS),
});

const servers = z.array(server).max(MAX_SERVERS);

const hello = z.object({
  type: z.literal('hello'),
  agent: z.object({ id: z.string().min(1).max(253), version: z.string().max(64) }),
  servers,
});

const inventory = z.object({ type: z.literal('inventory'), servers });

const jsonRpcId = z.union([z.string(), z.number()]);

const rpc = z.object({
  type: z.literal('rpc'),
  server: z.string().min(1).max(64),
  message: z.looseObject({ jsonrpc: z.literal('2.0') }),
  relatedRequestId: jsonRpcId.optional(),
});

const withId = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: jsonRpcId,
});

export type AgentFrame =
  | { kind: 'hello'; agentId: string; version: string; servers: ProtocolServer[] }
  | { kind: 'inventory'; servers: ProtocolServer[] }
  | {
      kind: 'response';
      server: string;
      id: string | number;
      message: Record<string, unknown>;
    }
  | { kind: 'notification'; server: string; message: Record<string, unknown> }
  /** An MCP server's request for the client of the relay's request `relatedId`. */
  | {
      kind: 'request';
      server: string;
      id: string | number;
      message: Record<string, unknown>;
      relatedId: string | number | undefined;
    }
  /** A frame type this relay does not know: ignored, so agents can add frames later. */
  | { kind: 'unknown'; type: string }
  /** `tooBig`: over the frame size limit (closed with 1009 rather than 1008). */
  | { kind: 'invalid'; reason: string; tooBig?: boolean };

/**
 * Parses one text frame within the protocol's size and depth limits (the agent's codec), so a
 * frame nested 20,000 deep is invalid here, before anything downstream could overflow.
 */
export function parseAgentFrame(text: string, limits: FrameLimits): AgentFrame {
  const decoded = decodeFrame(text, limits);
  if (!decoded.ok) {
    return Buffer.byteLength(text) > limits.maxFrameBytes
      ? { kind: 'invalid', reason: decoded.reason, tooBig: true }
      : { kind: 'invalid', reason: decoded.reason };
  }
  const json = decoded.value;
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { kind: 'invalid', reason: 'frame is not a JSON object' };
  }
  const type = (json as { type?: unknown }).type;
  switch (type) {
    case 'hello': {
      const frame = hello.safeParse(json);
      if (!frame.success) return { kind: 'invalid', reason: 'malformed hello frame' };
      return {
        kind: 'hello',
        agentId: frame.data.agent.id,
        version: frame.data.agent.version,
        servers: frame.data.servers as ProtocolServer[],
      };
    }
    case 'inventory': {
      const frame = inventory.safeParse(json);
      if (!frame.success) return { kind: 'invalid', reason: 'malformed inventory frame' };
      return { kind: 'inventory', servers: frame.data.servers as ProtocolServer[] };
    }
    case 'rpc':
      return parseRpc(json);
    default:
      return typeof type === 'string'
        ? { kind: 'unknown', type: type.slice(0, 64) }
        : { kind: 'invalid', reason: 'frame has no type' };
  }
}

function parseRpc(json: unknown): AgentFrame {
  const frame = rpc.safeParse(json);
  if (!frame.success) return { kind: 'invalid', reason: 'malformed rpc frame' };
  const { server, message, relatedRequestId: relatedId } = frame.data;
  const identified = withId.safeParse(message);
  if (typeof message.method === 'string') {
    return identified.success
      ? { kind: 'request', server, id: identified.data.id, message, relatedId }
      : { kind: 'notification', server, message };
  }
  if (!identified.success || (!('result' in message) && !('error' in message))) {
    return { kind: 'invalid', reason: 'rpc message is neither a response nor a notification' };
  }
  return { kind: 'response', server, id: identified.data.id, message };
}
