import { mkdirSync, writeFileSync } from 'node:fs';
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
    return `${cpus} CPU`;
  } catch (error) {
    return `none (${error.code ?? error.message})`;
  }
}
