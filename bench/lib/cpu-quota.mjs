import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A cgroup v1 CPU quota for `pid` (the pod's `resources.limits.cpu`), when this machine lets us
 * make cgroups; says what was set.
 */
export function limitCpu(pid, cpus, name) {
  if (!(cpus > 0)) return 'none';
  const group = `/sys/fs/cgroup/cpu/plant-store-${name}-${pid}`;
  try {
    mkdirSync(group, { recursive: true });
    writeFileSync(join(group, 'cpu.cfs_period_us'), '100000');
    writeFileSync(join(group, 'cpu.cfs_quota_us'), String(Math.round(cpus * 100_000)));
    writeFileSync(join(group, 'cgroup.procs'), String(pid));
    // Removable once `pid` has ended; a relay still running keeps it (the bench says so).
    process.on('exit', () => {
      try {
        rmdirSync(group);
      } catch (error) {
        console.error(`${group} not removed: ${error.code}`);
      }
    });
    return `${cpus} CPU`;
  } catch (error) {
    return `none (${error.code ?? error.message})`;
  }
}

/** How often the quota of `limitCpu(pid, …, name)` stopped `pid`, and for how long, so far. */
export function throttling(pid, name) {
  try {
    const stat = readFileSync(`/sys/fs/cgroup/cpu/plant-store-${name}-${pid}/cpu.stat`, 'utf8');
    const field = (key) => Number(new RegExp(`^${key} (\\d+)`, 'm').exec(stat)?.[1]);
    return { times: field('nr_throttled'), ms: field('throttled_time') / 1e6 };
  } catch {
    return { times: 0, ms: 0 };
  }
}
