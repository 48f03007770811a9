import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** TCP_LISTEN in the `st` column of /proc/net/tcp. */
const LISTEN = '0A';

/**
 * The TCP ports process `pid` listens on, from Linux's /proc: its socket inodes matched against
 * the listening rows of its network namespace's TCP tables. What the process really bound,
 * whether or not it logged it.
 */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = readLinkOrEmpty(`/proc/${pid}/fd/${fd}`);
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    const rows = readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1);
    for (const row of rows) {
      const [, local, , state, , , , , , inode] = row.trim().split(/\s+/);
      if (state === LISTEN && inode && inodes.has(inode)) {
        ports.add(Number.parseInt(local!.split(':')[1]!, 16));
      }
    }
  }
  return [...ports].sort((a, b) => a - b);
}

function readLinkOrEmpty(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    // The descriptor closed between the listing and the read.
    return '';
  }
}
