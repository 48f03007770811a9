import { z } from 'zod';
import type { ProtocolServer } from '../../agent-protocol/relay-protocol.js';
import { decodeFrame, type FrameLimits } from '../../agent-protocol/frame-codec.js';
import { isObject, type Message } from '../json-rpc/json-rpc.js';

// An agent's frames (docs/agent-protocol.md). An agent is a peer like any other: every field is
// bounded, and a frame that does not fit is reported invalid (never thrown) to drop its connection.

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

// rpc frames carry every answer, so they are checked by hand rather than by zod, which copies
// the message (twice: the frame, then the id).
type Id = string | number;
const isId = (value: unknown): value is Id =>
  typeof value === 'string' || typeof value === 'number';

export type AgentFrame =
  | { kind: 'hello'; agentId: string; version: string; servers: ProtocolServer[] }
  | { kind: 'inventory'; servers: ProtocolServer[] }
  | { kind: 'response'; server: string; id: Id; message: Message }
  /** `client`: sent by that client's own process of the server (a per-client server). */
  | { kind: 'notification'; server: string; message: Message; client: string | undefined }
  /** An MCP server's request for the client of the relay's request `relatedId`. */
  | { kind: 'request'; server: string; id: Id; message: Message; relatedId: Id | undefined }
  /** A frame type this relay does not know: ignored, so agents can add frames later. */
  | { kind: 'unknown'; type: string }
  /** `tooBig`: over the frame size limit (closed with 1009 rather than 1008). */
  | { kind: 'invalid'; reason: string; tooBig?: boolean };

// Parses within the protocol's size and depth limits (the agent's codec). Never throws: a frame
// nested 20,000 deep is invalid here, before a JSON.stringify downstream could overflow the stack.
export function parseAgentFrame(text: string, limits: FrameLimits): AgentFrame {
  const decoded = decodeFrame(text, limits);
  if (!decoded.ok) {
    return Buffer.byteLength(text) > limits.maxFrameBytes
      ? { kind: 'invalid', reason: decoded.reason, tooBig: true }
      : { kind: 'invalid', reason: decoded.reason };
  }
  const json = decoded.value;
  if (!isObject(json)) return { kind: 'invalid', reason: 'frame is not a JSON object' };
  const { type } = json;
  switch (type) {
    case 'hello':
    case 'inventory': {
      const frame = (type === 'hello' ? hello : inventory).safeParse(json);
      if (!frame.success) return { kind: 'invalid', reason: `malformed ${type} frame` };
      const servers = frame.data.servers as ProtocolServer[];
      if (!('agent' in frame.data)) return { kind: 'inventory', servers };
      const { id: agentId, version } = frame.data.agent;
      return { kind: 'hello', agentId, version, servers };
    }
    case 'rpc':
      return parseRpc(json);
    default:
      return typeof type === 'string'
        ? { kind: 'unknown', type: type.slice(0, 64) }
        : { kind: 'invalid', reason: 'frame has no type' };
  }
}

/** An rpc frame: an MCP server's response, notification, or request for its client. */
function parseRpc(json: Message): AgentFrame {
  const { server, message, relatedRequestId: relatedId, client } = json;
  const wellFormed =
    typeof server === 'string' &&
    server.length >= 1 &&
    server.length <= 64 &&
    isObject(message) &&
    message.jsonrpc === '2.0' &&
    (relatedId === undefined || isId(relatedId));
  if (!wellFormed) return { kind: 'invalid', reason: 'malformed rpc frame' };
  const { id } = message;
  if (typeof message.method === 'string') {
    return isId(id)
      ? { kind: 'request', server, id, message, relatedId }
      : { kind: 'notification', server, message, client: clientName(client) };
  }
  if (!isId(id) || (!('result' in message) && !('error' in message))) {
    return { kind: 'invalid', reason: 'rpc message is neither a response nor a notification' };
  }
  return { kind: 'response', server, id, message };
}

function clientName(tag: unknown): string | undefined {
  return isObject(tag) && typeof tag.name === 'string' ? tag.name : undefined;
}
