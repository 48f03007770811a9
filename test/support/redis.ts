import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from '../fixtures/mcp-e2e-support.js';

/**
 * A throwaway `redis-server` (Debian's package; `.ci/start-redis.sh` installs it in CI) on a
 * loopback port of its own, without persistence: each test file starts one. Without the binary
 * the Redis specs are skipped, unless REQUIRE_REDIS=1 (CI) makes that a failure.
 */
export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';
export const redisAvailable = hasRedis();
if (!redisAvailable && process.env.REQUIRE_REDIS === '1') {
  throw new Error(`REQUIRE_REDIS=1 but ${REDIS_SERVER} is not installed`);
}

function hasRedis(): boolean {
  try {
    execFileSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export class TestRedis {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'plant-store-redis-'));
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts (again, on the same port after a stop) and resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const args = ['--bind', '127.0.0.1', '--port', String(this.port), '--save', ''];
    args.push('--appendonly', 'no', '--dir', this.dir, '--logfile', '');
    this.child = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
    const exited = new Promise<never>((_, reject) => {
      this.child?.once('error', reject);
      this.child?.once('exit', (code) => reject(new Error(`redis-server exited (${code})`)));
    });
    await Promise.race([untilAccepting(this.port), exited]);
  }

  /** Stops it (all data gone: it comes back empty). */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGKILL');
    });
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function untilAccepting(port: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
      socket.once('close', () => socket.destroy());
    }).finally(() => undefined);
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server did not accept connections on ${port}`);
}

/**
 * Waits until `replicas` (their RELAY_REPLICA_URL; any, if none are given) list `agent` in
 * Redis: the other replicas find an agent's connection only through that entry.
 */
export async function untilAgentPublished(
  redisUrl: string,
  agent: string,
  replicas: string[] = [],
): Promise<void> {
  const directory = new Redis(redisUrl);
  try {
    const published = async () => {
      const holders = Object.keys(await directory.hgetall(`relay:agent:${agent}`));
      return replicas.length === 0
        ? holders.length > 0
        : replicas.every((u) => holders.includes(u));
    };
    await waitFor(published, `agent ${agent} published in Redis`);
  } finally {
    directory.disconnect();
  }
}
