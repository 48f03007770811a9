import { createHash } from 'node:crypto';
import type { AgentConnection } from '../../agents/agent-connection.js';

/**
 * What an agent offers, as a digest: each server that is up on some open connection with the
 * tools that connection lists. Pods that list the same tools count once.
 */
export function offeredDigest(
  connections: readonly Pick<AgentConnection, 'open' | 'servers'>[],
): string {
  const entries = new Set<string>();
  for (const connection of connections) {
    if (!connection.open) continue;
    for (const server of connection.servers) {
      if (server.state === 'up') entries.add(JSON.stringify([server.name, server.tools]));
    }
  }
  const hash = createHash('sha256');
  for (const entry of [...entries].sort()) hash.update(entry).update('\n');
  return hash.digest('hex');
}
