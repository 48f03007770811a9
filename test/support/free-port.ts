import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Ports handed out outside Linux's ephemeral range (32768-60999 by default): a port the kernel
 * gave to `listen(0)` a moment ago may be handed to an outgoing connection (a PostgreSQL client,
 * a fetch) before the app binds it. Each vitest worker takes its own slice, so two test files
 * running side by side never pick the same port either.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low && high) return [low, high];
  } catch {
    // not Linux: assume its default
  }
  return [32_768, 60_999];
}
const [low, high] = ephemeralRange();
// Below the range when there is room for it, else above it.
const [FIRST, LAST] = low - 10_000 >= 1024 ? [low - 10_000, low - 1] : [high + 1, 65_535];
const SLICES = 16;
const SLICE = Math.floor((LAST - FIRST + 1) / SLICES);
const worker = Number.parseInt(process.env.VITEST_POOL_ID ?? '1', 10) || 1;
const base = FIRST + ((worker - 1) % SLICES) * SLICE;
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
