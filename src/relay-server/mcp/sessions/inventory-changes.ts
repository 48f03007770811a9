import type { ProtocolServer } from '../../../agent-protocol/relay-protocol.js';

/** A server's notification that one of its lists changed: the same for every client. */
export const LIST_CHANGED = /^notifications\/(tools|prompts|resources)\/list_changed$/;
export const TOOLS_LIST_CHANGED = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };

/** The servers whose tools as a client sees them (up ones only) differ between two inventories. */
export function changedServers(
  before: readonly ProtocolServer[],
  after: readonly ProtocolServer[],
): string[] {
  const offered = (servers: readonly ProtocolServer[]) =>
    new Map(servers.filter((s) => s.state === 'up').map((s) => [s.name, JSON.stringify(s.tools)]));
  const was = offered(before);
  const is = offered(after);
  const changed = new Set<string>();
  for (const [name, tools] of was) if (is.get(name) !== tools) changed.add(name);
  for (const name of is.keys()) if (!was.has(name)) changed.add(name);
  return [...changed];
}
