/**
 * CPU time a process has run, in microseconds, from each of its threads' schedstat (the
 * scheduler's nanoseconds): /proc/<pid>/stat counts in 10 ms ticks, too coarse for the short
 * alternating slices that make two builds meet the same load from the rest of the machine.
 */
import { readdirSync, readFileSync } from 'node:fs';

export const cpuMicros = (pid) => schedstatMicros(pid, 0);

/** Time its threads were ready to run but waited for a CPU: what the rest of the machine took. */
export const runQueueMicros = (pid) => schedstatMicros(pid, 1);

function schedstatMicros(pid, field) {
  let nanoseconds = 0;
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      nanoseconds += Number(
        readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ')[field],
      );
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return nanoseconds / 1000;
}
