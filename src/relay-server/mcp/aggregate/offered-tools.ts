import { createHash } from 'node:crypto';
import type { ProtocolServer } from '../../../agent-protocol/relay-protocol.js';
import type { AgentConnection } from '../../agents/agent-connection.js';

// Made once per inventory: an agent of a thousand pods would otherwise stringify every pod's
// tools at each pod's connect.
const entries = new WeakMap<readonly ProtocolServer[], string[]>();

function entriesOf(servers: readonly ProtocolServer[]): string[] {
  let list = entries.get(servers);
  if (!list) {
    const up = servers.filter((server) => server.state === 'up');
    list = up.map((server) => JSON.stringify([server.name, server.tools]));
    entries.set(servers, list);
  }
  return list;
}

/** A digest of each up server's tools on the open connections; pods listing the same count once. */
export function offeredDigest(
  connections: readonly Pick<AgentConnection, 'open' | 'servers'>[],
): string {
  const offered = new Set<string>();
  for (const connection of connections) {
    if (connection.open) for (const entry of entriesOf(connection.servers)) offered.add(entry);
  }
  const hash = createHash('sha256');
  for (const entry of [...offered].sort()) hash.update(entry).update('\n');
  return hash.digest('hex');
}
