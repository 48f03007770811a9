import type { ClientTag } from '../../agent-protocol/relay-protocol.js';
import type { RelaySession } from './session-store.service.js';

/** Who the agent may ask on behalf of the MCP server while this request is in flight. */
export function clientTag({ id, client, capabilities }: RelaySession): ClientTag {
  return capabilities ? { name: client, session: id, capabilities } : { name: client, session: id };
}
