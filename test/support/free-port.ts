import { createServer } from 'node:net';

/**
 * Ports handed out below Linux's ephemeral range (32768-60999): a port the kernel gave to
 * `listen(0)` a moment ago may be handed to an outgoing connection (a PostgreSQL client, a
 * fetch) before the app binds it. Each vitest worker takes its own slice, so two test files
 * running side by side never pick the same port either.
 */
const FIRST = 20_000;
const LAST = 32_000;
const SLICES = 16;
const SLICE = Math.floor((LAST - FIRST) / SLICES);
const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 1);
const base = FIRST + (Math.max(0, worker - 1) % SLICES) * SLICE;
let next = Math.floor(Math.random() * SLICE);

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP port on 127.0.0.1 that is free now and that this worker has not handed out before. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < SLICE; tries++) {
    const port = base + (next++ % SLICE);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${base}..${base + SLICE - 1}`);
}
