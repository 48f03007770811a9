import { readdirSync, readFileSync } from 'node:fs';

/** Signals a whole process group; false when no process of the group is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** Whether a non-zombie of the group runs (PID 1 may take a second to reap); without /proc, any. */
export function groupRunning(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const stat = parseProcStat(text);
    if (stat && stat.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X') return true;
  }
  return false;
}

/** The command name may contain spaces and parentheses, so fields start after the last ')'. */
export function parseProcStat(text: string) {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const [state, , pgid] = text.slice(close + 2).split(' ');
  if (state === undefined || pgid === undefined) return undefined;
  return { state, pgid: Number(pgid) };
}
