import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/client';
import {
  idOf,
  isObject,
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../../json-rpc/json-rpc.js';
import { MISSING_CAPABILITIES_META } from '../../../agent-protocol/relay-protocol.js';
import { headerMismatch, type StandardHeaders } from './standard-headers.js';

/** The version the relay translates for its 2025 servers; see docs/design/mcp-2026-07-28.md. */
export const MODERN_VERSION = '2026-07-28';

/** The envelope keys a 2025 server must not see: the relay answers for them. */
const ENVELOPE_KEYS = [
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
];

/** MCP 2026-07-28's MissingRequiredClientCapabilityError. */
const MISSING_CAPABILITY = -32021;

/** Results the 2026 schema makes cacheable: they need `ttlMs` and `cacheScope`. */
const CACHEABLE = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/** 2026 error codes the relay answers with itself, and the 2025 "resource not found". */
const UNSUPPORTED_VERSION = -32022;
const HEADER_MISMATCH = -32020;
const RESOURCE_NOT_FOUND_2025 = -32002;

/** Server capabilities a 2026 client knows; `tasks` and resource subscriptions are gone. */
const MODERN_CAPABILITIES = [
  'experimental',
  'completions',
  'prompts',
  'resources',
  'tools',
  'extensions',
];

export function metaOf(message: unknown): Message | undefined {
  if (!isObject(message) || !isObject(message.params)) return undefined;
  return isObject(message.params._meta) ? message.params._meta : undefined;
}

/** Whether a POST speaks 2026-07-28: its envelope or (no envelope) its version header says so. */
export function isStateless(message: unknown, protocolHeader: string | undefined): boolean {
  const enveloped = metaOf(message)?.[PROTOCOL_VERSION_META_KEY] !== undefined;
  return enveloped || protocolHeader === MODERN_VERSION;
}

/** Methods 2026-07-28 removed: the relay answers them -32601 (HTTP 404) itself. */
const REMOVED_METHODS = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
]);

// Refused before forwarding (HTTP 400; 404 for a removed method). Headers are compared first: a
// mismatch is the client's mistake whatever it asked.
export function refusal(message: Message, headers: StandardHeaders): JsonRpcResponse | undefined {
  const id = idOf(message);
  if (typeof message.method !== 'string' || id === null) return undefined;
  const meta = metaOf(message);
  const version = meta?.[PROTOCOL_VERSION_META_KEY];
  if (version === undefined || !isObject(meta?.[CLIENT_CAPABILITIES_META_KEY])) {
    return jsonRpcError(id, JsonRpcCode.InvalidParams, ENVELOPE_NEEDED);
  }
  const mismatch = headerMismatch(message, headers, version);
  if (mismatch) return jsonRpcError(id, HEADER_MISMATCH, mismatch);
  if (version !== MODERN_VERSION) {
    return jsonRpcError(id, UNSUPPORTED_VERSION, 'unsupported protocol version', {
      supported: [MODERN_VERSION],
      requested: version,
    });
  }
  if (REMOVED_METHODS.has(message.method)) {
    const removed = `${message.method} is not a 2026-07-28 method`;
    return jsonRpcError(id, JsonRpcCode.MethodNotFound, removed);
  }
  return undefined;
}

const ENVELOPE_NEEDED =
  'a 2026-07-28 request needs its _meta envelope with protocolVersion and clientCapabilities';

/** The request as a 2025 server takes it: the envelope keys out of `_meta`, the rest kept. */
export function withoutEnvelope(message: Message): Message {
  const meta = metaOf(message);
  if (!meta || !isObject(message.params)) return message;
  const rest = { ...meta };
  for (const key of ENVELOPE_KEYS) delete rest[key];
  const params = { ...message.params };
  if (Object.keys(rest).length > 0) params._meta = rest;
  else delete params._meta;
  return { ...message, params };
}

// `ttlMs: 0` and `cacheScope: 'private'`: the relay cannot know how long a list holds, nor whether
// it is the same for every client. 2025's "resource not found" becomes invalid-params.
export function toStatelessAnswer(request: Message, answer: JsonRpcResponse): JsonRpcResponse {
  const method = String(request.method);
  const missing = missingCapabilities(answer);
  if (missing) {
    const reason = 'the server needs client capabilities the request did not declare';
    return jsonRpcError(answer.id, MISSING_CAPABILITY, reason, { requiredCapabilities: missing });
  }
  if (answer.error !== undefined) {
    // Newer 2025 servers already answer a missing resource with invalid-params, without the uri.
    const code = answer.error.code;
    const missing =
      code === RESOURCE_NOT_FOUND_2025 ||
      (method === 'resources/read' && code === JsonRpcCode.InvalidParams);
    if (!missing) return answer;
    const uri = isObject(request.params) ? request.params.uri : undefined;
    const data = isObject(answer.error.data) ? answer.error.data : {};
    return {
      ...answer,
      error: { ...answer.error, code: JsonRpcCode.InvalidParams, data: { uri, ...data } },
    };
  }
  if (!isObject(answer.result)) return answer;
  const result: Message = { resultType: 'complete', ...answer.result };
  if (CACHEABLE.has(method)) {
    result.ttlMs ??= 0;
    result.cacheScope ??= 'private';
  }
  return { ...answer, result };
}

/** The answer to `server/discover`, made of a 2025 `initialize` result. */
export function discoverAnswer(id: JsonRpcId, initialize: JsonRpcResponse): JsonRpcResponse {
  if (initialize.error !== undefined || !isObject(initialize.result)) return { ...initialize, id };
  const init = initialize.result;
  const capabilities: Message = {};
  const offered = isObject(init.capabilities) ? init.capabilities : {};
  for (const name of MODERN_CAPABILITIES) {
    if (offered[name] !== undefined) capabilities[name] = offered[name];
  }
  // The relay tells a 2026 client when the tools change (subscriptions/listen), whether or not
  // the server itself would: it follows restarts and hot reloads in the agent's inventory.
  if (isObject(capabilities.tools))
    capabilities.tools = { ...capabilities.tools, listChanged: true };
  if (isObject(capabilities.resources)) {
    const resources = { ...capabilities.resources };
    delete resources.subscribe;
    capabilities.resources = resources;
  }
  return {
    jsonrpc: '2.0',
    id,
    result: {
      resultType: 'complete',
      supportedVersions: [MODERN_VERSION],
      capabilities,
      ...(typeof init.instructions === 'string' && { instructions: init.instructions }),
      ttlMs: 0,
      cacheScope: 'private',
      ...(isObject(init.serverInfo) && { _meta: { [SERVER_INFO_META_KEY]: init.serverInfo } }),
    },
  };
}

// The capabilities the agent noted the client lacked, only when the server failed for want of
// them; a server that got by without them answers as usual.
function missingCapabilities(answer: JsonRpcResponse): Message | undefined {
  const failed = answer.error ?? (isObject(answer.result) && answer.result.isError === true);
  const noted = answer.error ? answer.error.data : isObject(answer.result) && answer.result._meta;
  const missing = isObject(noted) ? noted[MISSING_CAPABILITIES_META] : undefined;
  return failed && isObject(missing) ? missing : undefined;
}

/** 404 for a method it lacks, 400 for a client capability it lacks (answerOf makes a cap 429). */
export function statusOf(answer: JsonRpcResponse): number {
  const code = answer.error?.code;
  return code === JsonRpcCode.MethodNotFound ? 404 : code === MISSING_CAPABILITY ? 400 : 200;
}
