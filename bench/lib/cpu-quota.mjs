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
    process.on('exit', () => {
      try {
        rmdirSync(group);
      } catch (error) {
        console.error(`${group} not removed: ${error.code}`);
      }
    });
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
