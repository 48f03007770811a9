import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/cpu'; // cgroup v1's cpu controller; not there on v2 hosts

/** Empty groups an earlier run left (one stopped with Ctrl-C): rmdir refuses groups in use. */
function removeStale() {
  for (const name of readdirSync(ROOT).filter((n) => n.startsWith('plant-store-'))) {
    try {
      rmdirSync(join(ROOT, name));
    } catch {
      // still holds a process
    }
  }
}

/** The groups made so far, removed at exit by one listener (removeStale may have gone first). */
const made = new Set();
function removeAtExit(group) {
  if (made.size === 0) {
    process.on('exit', () => {
      for (const dir of made) {
        try {
          rmdirSync(dir);
        } catch (error) {
          if (error.code !== 'ENOENT') console.error(`${dir} not removed: ${error.code}`);
        }
      }
    });
  }
  made.add(group);
}

/** Why no CPU quota can be set here (no cgroup v1 cpu controller, not root), or undefined. */
export function cpuQuotaProblem() {
  const probe = join(ROOT, `plant-store-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return undefined;
  } catch (error) {
    return `cannot make a CPU cgroup under ${ROOT} (${error.code ?? error.message})`;
  }
}

/**
 * A cgroup v1 CPU quota for `pid` (the pod's `resources.limits.cpu`), when this machine lets us
 * make cgroups; says what was set. The group goes when this process exits (after `pid`).
 */
export function limitCpu(pid, cpus, name) {
  if (!(cpus > 0)) return 'none';
  const group = join(ROOT, `plant-store-${name}-${pid}`);
  try {
    removeStale();
    mkdirSync(group);
    removeAtExit(group);
    writeFileSync(join(group, 'cpu.cfs_period_us'), '100000');
    writeFileSync(join(group, 'cpu.cfs_quota_us'), String(Math.round(cpus * 100_000)));
    writeFileSync(join(group, 'cgroup.procs'), String(pid));
    return `${cpus} CPU`;
  } catch (error) {
    return `none (${error.code ?? error.message})`;
  }
}

/**
 * How often the quota of `limitCpu(pid, …, name)` throttled `pid` so far, and the throttled
 * time (summed over the CPUs' run queues: more than the wall time when several threads wait);
 * undefined without a quota.
 */
export function throttling(pid, name) {
  try {
    const stat = readFileSync(join(ROOT, `plant-store-${name}-${pid}`, 'cpu.stat'), 'utf8');
    const field = (key) => Number(new RegExp(`^${key} (\\d+)`, 'm').exec(stat)?.[1]);
    return { times: field('nr_throttled'), ms: field('throttled_time') / 1e6 };
  } catch {
    return undefined;
  }
}
