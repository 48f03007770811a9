/**
 * What one relayed tool call costs the relay: `tools/call` over Streamable HTTP (TLS, keep-alive,
 * a session per client) from a fixed number of concurrent clients, through the built relay to
 * the built service as its agent and the echo fixture as MCP server, round after round.
 *
 * The figure that holds on 2 shared cores is the relay process's CPU time per call (utime +
 * stime from /proc/<pid>/stat over the round, every thread); calls/s and the latency
 * percentiles move with whatever else the machine runs ("relay waited": the time the relays
 * were ready to run but waited for a core, from schedstat). With --compare the other build
 * gets its own relay and agent, measured in the same rounds, interleaved (A B, B A, ...).
 *
 *   npm run build && node bench/relay-calls.mjs [--rounds 5] [--calls 4000] [--warmup 20000]
 *     [--clients 16] [--tenants 1] [--endpoint server|aggregate] [--agent real|sim]
 *     [--compare <other checkout>/dist] [--dist <dir>] [--node 24|20|current]
 *     [--relay-env NAME=VALUE ...] [--other-env NAME=VALUE ...]
 *     [--relay-args=--cpu-prof --cpu-prof-dir=/tmp/p] [--other-args=...]
 *     [--floor] [--perf] [--unbundled] [--callgrind] [--alloc] [--cpu 0.5] [--rate 200] [--peer]
 *   --warmup: closed-loop calls first, measured by nothing (20,000; 300 with --callgrind).
 *   --cpu: each relay in a cgroup with that CPU quota (the pod's limit).
 *   --rate: calls start on a schedule, so many a second over all clients (open loop), each
 *     timed from when it was due: a relay that stalls shows in the tail, as a client sees it.
 *   --perf: `perf record -e cpu-clock` of the first relay over the rounds (with
 *     --relay-args=--perf-basic-prof for names) into <logs>/perf.data, for `perf report`.
 *   --peer: two replicas sharing a redis-server of their own; the agent on one, the clients on
 *     the other, so every call is forwarded; the relay's CPU is both replicas'.
 *   --floor: also measure baselines/relay-floor.mjs (bare node:https and ws doing the same hop),
 *     with --agent sim.
 *   --dist <dir>: measure that build (a dist/ folder) as `this` instead of the checkout's.
 *   --other-env NAME=VALUE, --other-args=...: a setting or Node flags for the --compare build
 *     only (--compare may be this one).
 *   --tenants N: RELAY_CLIENTS holds N clients (the bench's own is one of them).
 *   --agent sim: an agent in this process that answers at once (latency is then the relay's).
 *   --unbundled: run tsc's dist/relay-server/main.js, whose profile names each file.
 *   --callgrind: the relays run under valgrind; the figure is instructions per call (use a few
 *     hundred calls: a call takes ~50x longer).
 *   --alloc: instead of the rounds, one run of --calls under V8's sampling heap profiler (through
 *     --inspect): the bytes each call allocates, by function and package.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { perfRecord } from './lib/perf-record.mjs';
import { cpuMicros, runQueueMicros } from './lib/process-cpu.mjs';
import { limitCpu } from './lib/cpu-quota.mjs';
import { callgrindLauncher, dumpInstructions, instrument, zero } from './lib/callgrind.mjs';
import { allocationTables, inspector, sampleAllocations } from './lib/heap-sampling.mjs';
import { targetNode } from './lib/node-runtime.mjs';
import { setTargetNode } from './lib/processes.mjs';
import { RawMcpClient } from './lib/raw-mcp-client.mjs';
import { startRedisServer } from './lib/redis-server.mjs';
import {
  makeCa,
  startAgent,
  startRelay,
  startSimAgent,
  TOKENS,
  untilEchoUp,
} from './lib/relay-path.mjs';
import { snapshotBuild, snapshotOther } from './lib/workspace.mjs';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    calls: { type: 'string', default: '4000' },
    // V8 compiles the hot path over the first ~10 s of load (bursts that a CPU quota stalls);
    // the figures are a replica that has run a while. Under valgrind, a few hundred.
    warmup: { type: 'string' },
    clients: { type: 'string', default: '16' },
    tenants: { type: 'string', default: '1' },
    endpoint: { type: 'string', default: 'server' },
    agent: { type: 'string', default: 'real' },
    compare: { type: 'string' },
    dist: { type: 'string' },
    node: { type: 'string', default: process.env.BENCH_NODE ?? '24' },
    'relay-args': { type: 'string', default: '' },
    'relay-env': { type: 'string', multiple: true, default: [] },
    'other-env': { type: 'string', multiple: true, default: [] },
    'other-args': { type: 'string', default: '' },
    unbundled: { type: 'boolean', default: false },
    callgrind: { type: 'boolean', default: false },
    alloc: { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    perf: { type: 'boolean', default: false },
    peer: { type: 'boolean', default: false },
    cpu: { type: 'string', default: '0' },
    rate: { type: 'string', default: '0' },
  },
});
const CALLS = Number(opts.calls);
const viaAggregate = opts.endpoint === 'aggregate';
const tool = viaAggregate ? 'echo__echo' : 'echo';
const toolCall = (id) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":{"text":"hello"}}}`;

async function openClients(relay, ca) {
  const path = viaAggregate ? '/mcp/lab' : '/mcp/lab/echo';
  const clients = [];
  for (let i = 0; i < Number(opts.clients); i++) {
    const client = new RawMcpClient({ port: relay.port, ca: ca.ca, path, token: TOKENS.client });
    await client.connect();
    // With --peer, -32001 (not available) until the replica has read from Redis where the agent
    // is (~250 ms).
    for (let tries = 1; ; tries++) {
      const failed = await client.initialize().then(
        () => undefined,
        (error) => error,
      );
      if (!failed) break;
      if (!opts.peer || !failed.message.includes('"code":-32001') || tries === 50) throw failed;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    clients.push(client);
  }
  return clients;
}

/** `name`'s relays: the one the clients reach, and (with --peer) the one the agent is on. */
async function startRelays(name, dist, ca, dir, node) {
  const floor = name === 'floor';
  const built = opts.unbundled ? 'relay-server/main.js' : 'bundle/relay-server.js';
  const entry = floor ? 'relay-floor.mjs' : built;
  const start = (suffix, env) =>
    startRelay({
      name: `relay-${name}${suffix}`,
      dist: floor ? join(import.meta.dirname, 'baselines') : dist,
      entry,
      ca,
      dir,
      nodeArgs: [
        ...`${opts['relay-args']} ${name === 'other' ? opts['other-args'] : ''}`
          .split(' ')
          .filter(Boolean),
        ...(opts.alloc ? ['--inspect=127.0.0.1:0'] : []),
      ],
      env: {
        // One agent connection answers every call, over 1,000 a second: the per-connection
        // frame budget (a flood guard, 1,000/s) would drop it mid-run.
        RELAY_AGENT_MAX_FRAMES_PER_SECOND: '0',
        ...env,
        ...Object.fromEntries(
          [...opts['relay-env'], ...(name === 'other' ? opts['other-env'] : [])].map((pair) =>
            pair.split(/=(.*)/s, 2),
          ),
        ),
      },
      launcher: opts.callgrind ? callgrindLauncher(dir, node.path) : undefined,
      tenants: Number(opts.tenants),
    });
  if (!opts.peer) {
    const relay = await start('', {});
    return { relay, home: relay, relays: [relay] };
  }
  const redisDir = join(dir, `redis-${name}`);
  mkdirSync(redisDir);
  // The replicas forward to each other over TLS, trusting the bench's CA.
  const env = {
    RELAY_REDIS_URL: (await startRedisServer(redisDir)).url,
    NODE_EXTRA_CA_CERTS: ca.caFile,
  };
  const [relay, home] = [await start('', env), await start('-home', env)];
  return { relay, home, relays: [relay, home] };
}

/**
 * The relays, the agent and the clients' sessions, for one build (`dist`), or for the floor
 * (baselines/relay-floor.mjs) with the agent of `dist`.
 */
async function startTarget(name, dist, ca, dir, node) {
  const { relay, home, relays } = await startRelays(name, dist, ca, dir, node);
  let agent;
  try {
    agent =
      opts.agent === 'sim'
        ? startSimAgent({ relay: home, ca })
        : await startAgent({
            name: `agent-${name}`,
            bundle: join(dist, 'bundle'),
            ...{ ca, dir, relay: home, nodePath: node.path },
          });
    await untilEchoUp(home);
    for (const [k, { pid }] of relays.entries()) {
      const quota = limitCpu(pid, Number(opts.cpu), `relay-calls${k ? '-home' : ''}`);
      if (opts.cpu !== '0') console.log(`relay-${name}${k ? '-home' : ''}: CPU quota ${quota}`);
    }
    return { name, dir, relay, relays, agent, clients: await openClients(relay, ca) };
  } catch (error) {
    await agent?.stop();
    for (const started of relays) await started.stop();
    throw error;
  }
}

/** `calls` tool calls from every client at once; latencies in ms, in call order. */
async function drive(clients, calls) {
  const latencies = new Float64Array(calls);
  let next = 0;
  let errors = 0;
  await Promise.all(
    clients.map(async (client) => {
      for (let i = next++; i < calls; i = next++) {
        const started = performance.now();
        const answer = await client.post(toolCall(i + 1)).catch(() => undefined);
        latencies[i] = performance.now() - started;
        if (answer?.status !== 200 || !answer.body.includes('"result"')) errors++;
      }
    }),
  );
  return { latencies, errors };
}

/**
 * --rate: call i is due at i / rate s and goes out on the first idle client (waiting in line
 * when none is); its latency counts from when it was due.
 */
function driveAtRate(clients, calls, rate) {
  const latencies = new Float64Array(calls);
  const idle = [...clients];
  const start = performance.now();
  const due = (i) => start + (i * 1000) / rate;
  let [sent, done, errors, timer] = [0, 0, 0, undefined];
  return new Promise((resolve) => {
    const send = (client) => {
      const i = sent++;
      client
        .post(toolCall(i + 1))
        .catch(() => undefined)
        .then((answer) => {
          latencies[i] = performance.now() - due(i);
          if (answer?.status !== 200 || !answer.body.includes('"result"')) errors++;
          if (++done === calls) return resolve({ latencies, errors });
          idle.push(client);
          if (timer === undefined) wake();
        });
    };
    // Sends what is due on idle clients; sleeps until the next is due while a client is idle.
    const wake = () => {
      timer = undefined;
      while (sent < calls && idle.length > 0 && due(sent) <= performance.now()) send(idle.pop());
      if (sent < calls && idle.length > 0) {
        timer = setTimeout(wake, Math.max(0, due(sent) - performance.now()));
      }
    };
    wake();
  });
}

/** The relay's cost over `run()`: CPU seconds of relay and agent, or the relay's instructions. */
async function cost(target, run) {
  const { relay, agent } = target;
  if (opts.callgrind) {
    zero(relay.pid);
    await run();
    return { relay: dumpInstructions(relay.pid, target.dir), agent: 0 };
  }
  const pids = [agent.pid ?? process.pid, ...target.relays.map((r) => r.pid)];
  const before = pids.map(cpuMicros);
  const waitedBefore = pids.map(runQueueMicros);
  await run();
  const [agentCpu, ...relaysCpu] = pids.map((pid, k) => cpuMicros(pid) - before[k]);
  const waited = pids.map((pid, k) => runQueueMicros(pid) - waitedBefore[k]);
  return { relay: sum(relaysCpu), agent: agentCpu, waited: sum(waited.slice(1)) };
}

/** One slice of --calls calls: what the relay and the agent spent, the time, the latencies. */
async function measure(target) {
  let outcome;
  const started = performance.now();
  const calls = async () =>
    (outcome = await (Number(opts.rate) > 0
      ? driveAtRate(target.clients, CALLS, Number(opts.rate))
      : drive(target.clients, CALLS)));
  const spent = await cost(target, calls);
  return { ...spent, ...outcome, seconds: (performance.now() - started) / 1000 };
}

const hrtimeUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * With --cpu-prof-dir in --relay-args: the measured window and its calls beside the profile,
 * so `node bench/profile-summary.mjs <file>` leaves out the start and the warm-up.
 */
function keepWindow(window) {
  const profDir = /--cpu-prof-dir=(\S+)/.exec(opts['relay-args'])?.[1];
  if (!profDir) return;
  const requests = Number(opts.rounds) * CALLS;
  writeFileSync(join(profDir, 'window.json'), JSON.stringify({ window, requests }));
}

const sum = (list) => list.reduce((a, b) => a + b, 0);
const relayFigure = (value) =>
  opts.callgrind ? `${(value / 1e3).toFixed(0)}k instr` : `${value.toFixed(0)} us`;

/** Totals over every slice: cost per call, calls/s, latency percentiles of all calls. */
function summarize(slices) {
  const calls = slices.length * CALLS;
  const latencies = Float64Array.from(slices.flatMap((slice) => [...slice.latencies])).sort();
  const at = (q) => latencies[Math.min(calls - 1, Math.floor(q * calls))].toFixed(2);
  return {
    relay: relayFigure(sum(slices.map((s) => s.relay)) / calls),
    agent: `${(sum(slices.map((s) => s.agent)) / calls).toFixed(0)} us`,
    waited: `${(sum(slices.map((s) => s.waited ?? 0)) / calls).toFixed(0)} us`,
    callsPerS: (calls / sum(slices.map((s) => s.seconds))).toFixed(0),
    percentiles: [at(0.5), at(0.99), at(0.999)],
    errors: sum(slices.map((s) => s.errors)),
  };
}

function printTable(results) {
  const load = loadavg().map((v) => v.toFixed(1));
  console.log(
    `\n${opts.rounds} slices x ${CALLS} calls per build, ${opts.clients} clients, ` +
      `${opts.endpoint} endpoint, ${opts.agent} agent; load ${load.join(' ')}`,
  );
  const unit = opts.callgrind ? 'instructions' : 'CPU';
  console.log(
    `| build | relay ${unit}/call | relay waited/call | agent CPU/call | calls/s | p50 ms | p99 ms | p99.9 ms | errors |`,
  );
  console.log('| ----- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, slices] of Object.entries(results)) {
    const m = summarize(slices);
    const agent = opts.agent === 'sim' || opts.callgrind ? '-' : m.agent;
    console.log(
      `| ${name} | ${m.relay} | ${m.waited} | ${agent} | ${m.callsPerS} | ${m.percentiles.join(' | ')} | ${m.errors} |`,
    );
  }
}

/** Each other target's relay cost over this one's: over all slices, and over each fifth. */
function printRatio(results) {
  const [first, ...others] = Object.keys(results);
  const a = results[first];
  const fifth = Math.max(1, Math.floor(a.length / 5));
  for (const name of others) {
    const b = results[name];
    const ratio = (from, to) =>
      sum(b.slice(from, to).map((s) => s.relay)) / sum(a.slice(from, to).map((s) => s.relay));
    const parts = [];
    for (let from = 0; from + fifth <= a.length; from += fifth)
      parts.push(ratio(from, from + fifth));
    const listed = parts.map((r) => r.toFixed(3)).join(', ');
    console.log(
      `\nrelay cost per call, ${name}/${first}: ${ratio(0, a.length).toFixed(3)}x (fifths: ${listed})`,
    );
  }
}

/** Bytes allocated per call in each target's relay, by package and by function. */
async function allocations(targets) {
  for (const target of targets) {
    const session = await inspector(target.relay.logFile);
    const profile = await sampleAllocations(session, () => drive(target.clients, CALLS));
    session.close();
    console.log(`\n${target.name}: ${allocationTables(profile, CALLS)}`);
  }
}

async function run(targets) {
  const warmup = Number(opts.warmup ?? (opts.callgrind ? 300 : 20_000));
  for (const target of targets) await drive(target.clients, warmup);
  if (opts.alloc) return allocations(targets);
  if (opts.callgrind) {
    // Instrumented code is translated anew: a short warm-up again before counting.
    for (const target of targets) instrument(target.relay.pid);
    for (const target of targets) await drive(target.clients, Math.min(CALLS, 200));
  }
  const results = Object.fromEntries(targets.map((t) => [t.name, []]));
  const perfFile = join(targets[0].dir, 'perf.data');
  const stopPerf = opts.perf ? await perfRecord(targets[0].relay.pid, perfFile) : undefined;
  const from = hrtimeUs();
  for (let round = 0; round < Number(opts.rounds); round++) {
    // A B, B A, ...: whichever goes first in a round is not always the same build.
    const order = round % 2 ? [...targets].reverse() : targets;
    for (const target of order) results[target.name].push(await measure(target));
  }
  keepWindow([from, hrtimeUs()]);
  if (stopPerf) await stopPerf().then(() => console.log(`perf report -i ${perfFile}`));
  printTable(results);
  printRatio(results);
}

const node = targetNode(opts.node);
setTargetNode(node.path);
const dir = mkdtempSync(join(tmpdir(), 'bench-relay-calls-'));
/** A copy of another build's dist/ (its bundle's folder's parent). */
const copyOf = (dist, folder) =>
  join(snapshotOther(join(dist, 'bundle/main.js'), dir, node.sqlitePackage, folder), '../..');
const builds = {
  this: opts.dist
    ? copyOf(opts.dist, 'build-a')
    : join(await snapshotBuild(dir, node.sqlitePackage), 'dist'),
  ...(opts.compare && { other: copyOf(opts.compare, 'build-b') }),
};
// The floor speaks only the frames the simulated agent sends.
if (opts.floor && opts.agent !== 'sim') throw new Error('--floor needs --agent sim');
for (const alone of ['floor', 'callgrind', 'alloc', 'perf']) {
  if (opts[alone] && opts.peer) throw new Error(`--${alone} sees one relay: not with --peer`);
}
if (opts.floor) builds.floor = builds.this;
console.log(`relay on Node ${node.version}, load from ${process.version}; logs in ${dir}`);
const ca = makeCa(join(dir, 'ca'));
const targets = [];
try {
  for (const [name, dist] of Object.entries(builds)) {
    targets.push(await startTarget(name, dist, ca, dir, node));
  }
  await run(targets);
} finally {
  for (const target of targets) {
    target.clients.forEach((client) => client.close());
    await target.agent.stop();
    for (const relay of target.relays) await relay.stop();
  }
}
