import type { ProtocolServer } from '../../agent-protocol/relay-protocol.js';

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
