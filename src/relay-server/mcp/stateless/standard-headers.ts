import { isObject, type Message } from '../../json-rpc/json-rpc.js';

/** Required, and must match the body, so a proxy routing on them and the server cannot disagree. */
export interface StandardHeaders {
  protocolVersion?: string;
  method?: string;
  name?: string;
}

/** The methods whose `Mcp-Name` mirrors a body field, and which field. */
const NAME_SOURCE = new Map([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
]);

const SENTINEL_START = '=?base64?';
const SENTINEL_END = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** What a header value may carry as it is: visible ASCII and space, no leading or trailing space. */
const PLAIN_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** Why the headers do not match the request, if so; Node has already trimmed each value. */
export function headerMismatch(
  message: Message,
  headers: StandardHeaders,
  version: unknown,
): string | undefined {
  if (headers.protocolVersion === undefined) return 'the MCP-Protocol-Version header is missing';
  if (headers.protocolVersion !== version) {
    return 'the MCP-Protocol-Version header does not match the request';
  }
  if (headers.method === undefined) return 'the Mcp-Method header is missing';
  if (headers.method !== message.method) return 'the Mcp-Method header does not match the request';
  const name = nameOf(message);
  if (name === undefined) return undefined;
  if (headers.name === undefined) return 'the Mcp-Name header is missing';
  const decoded = decodeValue(headers.name);
  if (decoded === undefined) return 'the Mcp-Name header is not valid Base64';
  return decoded === name ? undefined : 'the Mcp-Name header does not match the request';
}

/** The `Mcp-Name` a request needs, encoded as a header value; undefined when it needs none. */
export function nameHeader(message: Message): string | undefined {
  const name = nameOf(message);
  if (name === undefined) return undefined;
  const plain = PLAIN_VALUE.test(name) && !isSentinel(name);
  return plain ? name : `${SENTINEL_START}${Buffer.from(name).toString('base64')}${SENTINEL_END}`;
}

/** What `Mcp-Name` mirrors: a tool's or prompt's name, a resource's URI. */
function nameOf(message: Message): string | undefined {
  const field = NAME_SOURCE.get(String(message.method));
  const value = field !== undefined && isObject(message.params) ? message.params[field] : undefined;
  return typeof value === 'string' ? value : undefined;
}

function isSentinel(value: string): boolean {
  const framed = value.length >= SENTINEL_START.length + SENTINEL_END.length;
  return framed && value.startsWith(SENTINEL_START) && value.endsWith(SENTINEL_END);
}

/** A header value as it was meant: Base64 in the sentinel decoded; undefined when malformed. */
function decodeValue(value: string): string | undefined {
  if (!isSentinel(value)) return value;
  const encoded = value.slice(SENTINEL_START.length, -SENTINEL_END.length);
  if (!CANONICAL_BASE64.test(encoded)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64'));
  } catch {
    return undefined;
  }
}
