import { spawn } from 'node:child_process';
import { connect } from 'node:net';
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
  const more = ['--save', '', '--appendonly', 'no', '--logfile', join(dir, 'redis.log')];
  const server = spawn('redis-server', [...args, ...more], { stdio: 'ignore' });
  process.on('exit', () => server.kill());
  await new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(new Error(`redis-server: ${error.code} (bash .ci/install-redis.sh installs it)`)),
    );
    server.once('exit', () => reject(new Error(`redis-server exited; see ${dir}/redis.log`)));
    // Ready once it answers on its socket.
    const poll = () =>
      connect(socket)
        .once('connect', function () {
          this.end();
          resolve();
        })
        .once('error', () => setTimeout(poll, 20));
    poll();
  });
  // Killed at exit; it keeps this process running no longer than its work does.
  server.unref();
  return { socket, url: `redis://127.0.0.1:${port}` };
}
