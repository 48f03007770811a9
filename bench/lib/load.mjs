/** Starting the load generator (load-worker.mjs) in its own process. */
import { fork } from 'node:child_process';
import { join } from 'node:path';

/** The load generator process; `run(job)` resolves with its result (see load-worker.mjs). */
export function startLoadWorker(defaults) {
  const worker = fork(join(import.meta.dirname, 'load-worker.mjs'), [], { stdio: 'inherit' });
  const pending = new Map();
  let nextId = 0;
  worker.on('message', ({ id, result, error }) => {
    const entry = pending.get(id);
    pending.delete(id);
    if (error) entry?.reject(new Error(error));
    else entry?.resolve(result);
  });
  return {
    run: (job) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        worker.send({ ...defaults, ...job, id });
      }),
    stop: () => worker.kill(),
  };
}
