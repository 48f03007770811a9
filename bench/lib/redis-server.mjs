import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './processes.mjs';

/**
 * A redis-server of the bench's own, on a Unix socket in `dir` and a free port of 127.0.0.1
 * (`url`), so no other Redis is measured by mistake; stopped when this process exits. Needs
 * redis-server (bash .ci/install-redis.sh).
 */
export async function startRedisServer(dir) {
  const socket = join(dir, 'redis.sock');
  const port = await freePort();
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--unixsocket', socket];
  const server = spawn('redis-server', [...args, '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  process.on('exit', () => server.kill());
  await new Promise((resolve, reject) => {
    server.once('exit', () => reject(new Error('redis-server exited')));
    let log = '';
    server.stdout.on(
      'data',
      (text) => (log += text) && /ready to accept connections/i.test(log) && resolve(),
    );
  });
  // Killed at exit; it keeps this process running no longer than its work does.
  server.stdout.destroy();
  server.unref();
  return { socket, url: `redis://127.0.0.1:${port}` };
}
