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
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
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

/**
 * The chart's defaults: the app container's memory and CPU limits, NODE_OPTIONS and Node's flags,
 * and the relay container's memory and CPU limits and the RELAY_* settings it adds (CPUs as
 * numbers: 500m is 0.5).
 */
export function chartPod(root) {
  const values = YAML.parse(readFileSync(join(root, 'helm/plant-store/values.yaml'), 'utf8'));
  const { memory } = values.resources.limits;
  const relay = values.relayServer ?? {};
  return {
    memory,
    serviceCpus: cpusOf(values.resources.limits.cpu),
    nodeOptions: values.nodeOptions ?? '',
    nodeArgs: values.nodeArgs ?? [],
    relayMemory: relay.resources?.limits?.memory ?? memory,
    relaySettings: relay.settings ?? {},
    relayCpus: cpusOf(relay.resources?.limits?.cpu),
  };
}

/** "500m" -> 0.5, "1" -> 1; none -> 0. A Kubernetes CPU quantity, as values.yaml writes it. */
function cpusOf(quantity = '0') {
  const text = String(quantity);
  return text.endsWith('m') ? Number(text.slice(0, -1)) / 1000 : Number(text);
}

/**
 * Where this process's memory cgroup is, so the processes under test nest inside it (its limits
 * and accounting still apply to them): cgroup v2 when its memory controller is there, else v1.
 */
function hierarchy() {
  const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v2 = join(V2_ROOT, 'cgroup.controllers');
  if (existsSync(v2) && readFileSync(v2, 'utf8').split(/\s+/).includes('memory')) {
    const path = own.find((line) => line.startsWith('0::'))?.slice(3) ?? '/';
    return { root: join(V2_ROOT, path), limitFile: 'memory.max' };
  }
  if (existsSync(join(V1_ROOT, 'memory.limit_in_bytes'))) {
    const line = own.find((l) => l.split(':')[1]?.split(',').includes('memory'));
    return { root: join(V1_ROOT, line?.split(':')[2] ?? '/'), limitFile: 'memory.limit_in_bytes' };
  }
  return undefined;
}

const PREFIX = 'plant-store-bench-';
const made = new Set();

/** Empty cgroups of earlier runs that were interrupted; busy ones stay. */
function removeStale(root) {
  for (const name of readdirSync(root)) {
    if (!name.startsWith(PREFIX)) continue;
    try {
      rmdirSync(join(root, name));
    } catch {
      // still in use by a live process
    }
  }
}

let pod; // { nodeOptions, nodeArgs, cpus, limit?: { bytes, hierarchy } } once enabled
let started = 0;

/**
 * Applies `{ memory, cpus, nodeOptions, nodeArgs }` to every process started after it in the pod
 * (`cpus` 0: no CPU quota). Returns why the memory limit cannot be applied here, if it cannot
 * (NODE_OPTIONS and nodeArgs still are).
 */
export function enablePod({ memory, cpus = 0, nodeOptions, nodeArgs = [] }) {
  pod = { nodeOptions, nodeArgs, cpus };
  const found = hierarchy();
  if (!found) return 'no memory cgroup hierarchy on this machine';
  const bytes = quantityBytes(memory);
  const probe = join(found.root, `${PREFIX}probe-${process.pid}`);
  try {
    removeStale(found.root);
    mkdirSync(probe);
    try {
      // A folder alone proves little: on cgroup v2 the limit file exists only when the memory
      // controller is enabled for this subtree.
      writeFileSync(join(probe, found.limitFile), String(bytes));
    } finally {
      rmdirSync(probe);
    }
  } catch (error) {
    return `cannot make a memory cgroup under ${found.root} (${error.code ?? error.message}); run as root`;
  }
  pod.limit = { bytes, hierarchy: found };
  process.once('exit', () => {
    for (const dir of made) {
      try {
        rmdirSync(dir);
      } catch {
        console.warn(`warning: ${dir} is left behind (rmdir it once its processes are gone)`);
      }
    }
  });
  return undefined;
}

/**
 * How to start `node args`: as in the pod when `inPod` and the pod is enabled, else as is. The
 * command, its arguments and environment, the CPUs of its quota (limitCpu sets it on the pid
 * once spawned), and the cgroup to remove once the process has exited. The shell joins the
 * cgroup, then execs node, so V8 sees the limit from its first allocation and the pid stays the
 * one spawn returns. NODE_OPTIONS come first, so options on the command line (--compare-args)
 * still win.
 */
export function podLaunch(name, nodePath, given, env, inPod = true) {
  if (!pod || !inPod) return { command: nodePath, args: given, env, cpus: 0, remove: () => {} };
  // Node's flags before the script, as the chart's command line has them; given ones win. A
  // launcher (valgrind, perf) would take them as its own.
  const isNode = /(^|\/)node$/.test(nodePath);
  const flags = isNode ? pod.nodeArgs.filter((flag) => !given.includes(flag)) : [];
  const args = [...flags, ...given];
  const withOptions = pod.nodeOptions
    ? { ...env, NODE_OPTIONS: [pod.nodeOptions, env.NODE_OPTIONS].filter(Boolean).join(' ') }
    : env;
  const { cpus } = pod;
  if (!pod.limit) return { command: nodePath, args, env: withOptions, cpus, remove: () => {} };
  const dir = join(pod.limit.hierarchy.root, `${PREFIX}${process.pid}-${++started}-${name}`);
  mkdirSync(dir, { recursive: true });
  made.add(dir);
  writeFileSync(join(dir, pod.limit.hierarchy.limitFile), String(pod.limit.bytes));
  return {
    command: '/bin/sh',
    args: ['-c', 'echo $$ > "$0" && exec "$@"', join(dir, 'cgroup.procs'), nodePath, ...args],
    env: withOptions,
    cpus,
    // A process's last threads can leave the cgroup a moment after its exit event.
    remove: async () => {
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          rmdirSync(dir);
          made.delete(dir);
          return;
        } catch {
          await sleep(100);
        }
      }
    },
  };
}
