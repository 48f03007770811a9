/**
 * The service and the raw baselines run as the chart's pod runs the service: under the
 * container's memory limit (resources.limits.memory) and with the chart's NODE_OPTIONS
 * (nodeOptions). json-server and Prism run with Node's defaults for the host, as a user would
 * run them: json-server holding 100,000 plants runs out of heap under a 512Mi limit.
 *
 * The limit matters because Node sizes V8's heap from it (uv_get_constrained_memory): under 512Mi
 * the heap limit is ~259 MiB and the young generation's semi-spaces are 1 MiB, where a 24 GiB host
 * gives ~4 GiB and 16 MiB. Without it the benchmark measures a different program. Each process
 * gets a memory cgroup of its own, when this machine lets us make one (root, and a cgroup v2 or
 * v1 memory hierarchy).
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import YAML from 'yaml';

const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/memory';
const UNITS = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9 };

/** "512Mi" -> bytes; a Kubernetes quantity, as values.yaml writes it. */
export function quantityBytes(quantity) {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(String(quantity).trim());
  if (!match) throw new Error(`not a memory quantity: ${quantity}`);
  return Math.round(Number(match[1]) * (match[2] ? UNITS[match[2]] : 1));
}

/** The chart's defaults: the container's memory limit and NODE_OPTIONS. */
export function chartPod(root) {
  const values = YAML.parse(readFileSync(join(root, 'helm/plant-store/values.yaml'), 'utf8'));
  return { memory: values.resources.limits.memory, nodeOptions: values.nodeOptions ?? '' };
}

function hierarchy() {
  const v2 = join(V2_ROOT, 'cgroup.controllers');
  if (existsSync(v2) && readFileSync(v2, 'utf8').split(/\s+/).includes('memory')) {
    return { root: V2_ROOT, limitFile: 'memory.max' };
  }
  if (existsSync(join(V1_ROOT, 'memory.limit_in_bytes'))) {
    return { root: V1_ROOT, limitFile: 'memory.limit_in_bytes' };
  }
  return undefined;
}

let pod; // { nodeOptions, limit?: { bytes, hierarchy } } once enabled
let started = 0;

/**
 * Applies `{ memory, nodeOptions }` to every process started after it. Returns why the memory
 * limit cannot be applied here, if it cannot (NODE_OPTIONS still is).
 */
export function enablePod({ memory, nodeOptions }) {
  pod = { nodeOptions };
  const found = hierarchy();
  if (!found) return 'no writable memory cgroup hierarchy on this machine';
  const probe = join(found.root, `plant-store-bench-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
  } catch (error) {
    return `cannot make a memory cgroup (${error.code ?? error.message}); run as root`;
  }
  pod.limit = { bytes: quantityBytes(memory), hierarchy: found };
  return undefined;
}

/**
 * How to start `node args` as in the pod: the command, its arguments and environment, and the
 * cgroup to remove once the process has exited. The shell joins the cgroup, then execs node, so
 * V8 sees the limit from its first allocation and the pid stays the one spawn returns. NODE_OPTIONS
 * come first, so options on the command line (--compare-args) still win.
 */
export function podLaunch(name, nodePath, args, env) {
  if (!pod) return { command: nodePath, args, env, remove: () => {} };
  const withOptions = pod.nodeOptions
    ? { ...env, NODE_OPTIONS: [pod.nodeOptions, env.NODE_OPTIONS].filter(Boolean).join(' ') }
    : env;
  if (!pod.limit) return { command: nodePath, args, env: withOptions, remove: () => {} };
  const dir = join(
    pod.limit.hierarchy.root,
    `plant-store-bench-${process.pid}-${++started}-${name}`,
  );
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, pod.limit.hierarchy.limitFile), String(pod.limit.bytes));
  return {
    command: '/bin/sh',
    args: ['-c', 'echo $$ > "$0" && exec "$@"', join(dir, 'cgroup.procs'), nodePath, ...args],
    env: withOptions,
    // A process's last threads can leave the cgroup a moment after its exit event.
    remove: async () => {
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          rmdirSync(dir);
          return;
        } catch {
          await sleep(100);
        }
      }
    },
  };
}
