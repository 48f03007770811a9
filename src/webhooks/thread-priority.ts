import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Lowers the calling thread's CPU priority: its nice value raised `by` steps from what it
 * inherited (at most to 19; a process already started with `nice` keeps its own floor). On Linux a nice
 * value belongs to a thread, not to the process: the thread's own id comes from
 * /proc/thread-self (a link to `<pid>/task/<tid>`), and setpriority(2) on that id changes this
 * thread only. Lowering needs no privilege. Elsewhere (no /proc, another OS, a sandbox that
 * refuses it) the thread keeps the process's priority and the reason is returned.
 */
export function lowerPriority(
  by: number,
): { applied: true; threadId: number; niceness: number } | { applied: false; reason: string } {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    if (!Number.isInteger(threadId) || threadId <= 0) {
      return { applied: false, reason: 'no thread id in /proc/thread-self' };
    }
    const niceness = Math.min(19, getPriority(threadId) + by);
    setPriority(threadId, niceness);
    return { applied: true, threadId, niceness };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return { applied: false, reason: typeof code === 'string' ? code : String(error) };
  }
}
