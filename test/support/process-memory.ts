import { readFileSync } from 'node:fs';

/**
 * The resident memory of a process in MiB, from /proc/<pid>/status (VmRSS): what a pod's
 * memory limit counts (together with the page cache), so tests bound it where a cgroup is not
 * available. Undefined once the process is gone.
 */
export function rssMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? undefined : Number(kib) / 1024;
  } catch {
    return undefined;
  }
}
