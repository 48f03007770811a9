/** Starting, timing and stopping the processes under test. */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { limitCpu } from './cpu-quota.mjs';
import { podLaunch } from './pod.mjs';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** One GET; resolves with the status code, or undefined when nothing answers. */
function probe(url, headers) {
  return new Promise((resolve) => {
    const req = request(url, { headers, agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

let targetNode = process.execPath;

/** The node binary every process under test runs on from now on (node-runtime.mjs). */
export function setTargetNode(path) {
  targetNode = path;
}

/**
 * Spawns `node <args>` with stdout and stderr going straight to `logFile` (the logs are still
 * produced and written, as in production, but never pass through this process), then polls
 * `readyUrl` every 10 ms. `readyMs` is the time from spawn to the first answer `isReady` accepts.
 */
export async function startProcess({
  name,
  args,
  env,
  cwd,
  logFile,
  readyUrl,
  readyHeaders,
  isReady,
  inPod = false,
  command = targetNode,
  readyWithinS = 60,
}) {
  const started = process.hrtime.bigint();
  const { child, exited } = spawnTarget({ name, command, args, env, cwd, logFile, inPod });
  let exitCode;
  void exited.then((code) => (exitCode = code));
  const deadline = Date.now() + readyWithinS * 1000;
  for (;;) {
    if (exitCode !== undefined) {
      throw new Error(`${name} exited with ${exitCode} before it was ready; see ${logFile}`);
    }
    const status = await probe(readyUrl, readyHeaders);
    if (status !== undefined && (isReady ?? ((s) => s === 200))(status)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} was not ready within ${readyWithinS} s; see ${logFile}`);
    }
    await sleep(10);
  }
  const readyAt = process.hrtime.bigint();
  const readyMs = Number(readyAt - started) / 1e6;
  return {
    name,
    pid: child.pid,
    readyMs,
    /** When it became ready, in microseconds of process.hrtime (a .cpuprofile's clock). */
    readyAtUs: Number(readyAt / 1000n),
    logFile,
    /** Peak resident set size so far (VmHWM), in bytes. */
    peakRss: () => peakRss(child.pid),
    async stop() {
      if (exitCode === undefined) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(killer);
      }
      return exitCode;
    },
  };
}

/** Spawns `command args` (in the pod when `inPod`), its output appended to `logFile`. */
function spawnTarget({ name, command, args, env, cwd, logFile, inPod }) {
  const log = openSync(logFile, 'a');
  const launch = podLaunch(name, command, args, env, inPod);
  const child = spawn(launch.command, launch.args, {
    env: launch.env,
    cwd,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const quota = limitCpu(child.pid, launch.cpus, name);
  if (quota.startsWith('none (')) console.warn(`warning: ${name} has no CPU quota: ${quota}`);
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  ).finally(launch.remove);
  return { child, exited };
}

export function peakRss(pid) {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
