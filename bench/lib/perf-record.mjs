/**
 * `perf record` on the CPU-time clock (`cpu-clock`), attached to a process: unlike V8's
 * --cpu-prof, which samples the wall clock, a thread waiting for the CPU on a loaded machine
 * gets no samples. With `node --perf-basic-prof` perf names the JavaScript frames too.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

/** Starts recording `pid` into `file`; resolves with a function that stops and waits. */
export async function perfRecord(pid, file) {
  const perf = spawn(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', '999', '-g', '-p', String(pid), '-o', file],
    {
      stdio: 'ignore',
    },
  );
  const exited = once(perf, 'exit');
  await sleep(500); // perf attaches to every thread before it counts
  return async () => {
    perf.kill('SIGINT');
    await exited;
  };
}
