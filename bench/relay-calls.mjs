/**
 * What one relayed tool call costs the relay: `tools/call` over Streamable HTTP (TLS, keep-alive,
 * a session per client) from a fixed number of concurrent clients, through the built relay to
 * the built service as its agent and the echo fixture as MCP server, round after round.
 *
 * The figure that holds on 2 shared cores is the relay process's CPU time per call (utime +
 * stime from /proc/<pid>/stat over the round, every thread); calls/s and the latency
 * percentiles move with whatever else the machine runs. With --compare the other build gets
 * its own relay and agent, measured in the same rounds, interleaved (A B, A B, ...).
 *
 *   npm run build && node bench/relay-calls.mjs [--rounds 5] [--calls 4000] [--warmup 3000]
 *     [--clients 16] [--tenants 1] [--endpoint server|aggregate] [--agent real|sim]
 *     [--compare <other checkout>/dist] [--node 24|20|current] [--relay-env NAME=VALUE ...]
 *     [--relay-args=--cpu-prof --cpu-prof-dir=/tmp/p] [--unbundled] [--callgrind] [--alloc]
 *   --tenants N: RELAY_CLIENTS holds N clients (the bench's own is one of them).
 *   --agent sim: an agent in this process that answers at once (latency is then the relay's).
 *   --unbundled: run tsc's dist/relay-server/main.js, whose profile names each file.
 *   --callgrind: the relays run under valgrind; the figure is instructions per call (use a few
 *     hundred calls: a call takes ~50x longer).
 *   --alloc: instead of the rounds, one run of --calls under V8's sampling heap profiler (through
 *     --inspect): the bytes each call allocates, by function and package.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { callgrindLauncher, dumpInstructions, instrument, zero } from './lib/callgrind.mjs';
import { aggregate, inspector, sampleAllocations, table, where } from './lib/heap-sampling.mjs';
import { targetNode } from './lib/node-runtime.mjs';
import { setTargetNode } from './lib/processes.mjs';
import { RawMcpClient } from './lib/raw-mcp-client.mjs';
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
    warmup: { type: 'string', default: '3000' },
    clients: { type: 'string', default: '16' },
    tenants: { type: 'string', default: '1' },
    endpoint: { type: 'string', default: 'server' },
    agent: { type: 'string', default: 'real' },
    compare: { type: 'string' },
    node: { type: 'string', default: process.env.BENCH_NODE ?? '24' },
    'relay-args': { type: 'string', default: '' },
    'relay-env': { type: 'string', multiple: true, default: [] },
    unbundled: { type: 'boolean', default: false },
    callgrind: { type: 'boolean', default: false },
    alloc: { type: 'boolean', default: false },
  },
});
const CALLS = Number(opts.calls);
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s
const viaAggregate = opts.endpoint === 'aggregate';
const tool = viaAggregate ? 'echo__echo' : 'echo';
const toolCall = (id) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":{"text":"hello"}}}`;

const cpuSeconds = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
};

async function openClients(relay, ca) {
  const path = viaAggregate ? '/mcp/lab' : '/mcp/lab/echo';
  const clients = [];
  for (let i = 0; i < Number(opts.clients); i++) {
    const client = new RawMcpClient({ port: relay.port, ca: ca.ca, path, token: TOKENS.client });
    await client.connect();
    await client.initialize();
    clients.push(client);
  }
  return clients;
}

/** A relay, its agent and the clients' sessions, for one build. */
async function startTarget(name, dist, ca, dir, node) {
  const relay = await startRelay({
    name: `relay-${name}`,
    dist,
    entry: opts.unbundled ? 'relay-server/main.js' : 'bundle/relay-server.js',
    ca,
    dir,
    nodeArgs: [
      ...opts['relay-args'].split(' ').filter(Boolean),
      ...(opts.alloc ? ['--inspect=127.0.0.1:0'] : []),
    ],
    env: Object.fromEntries(opts['relay-env'].map((pair) => pair.split(/=(.*)/s, 2))),
    launcher: opts.callgrind ? callgrindLauncher(dir, node.path) : undefined,
    tenants: Number(opts.tenants),
  });
  const bundle = join(dist, 'bundle');
  const agent =
    opts.agent === 'sim'
      ? startSimAgent({ relay, ca })
      : await startAgent({ name: `agent-${name}`, bundle, ca, dir, relay, nodePath: node.path });
  await untilEchoUp(relay);
  return { name, dir, relay, agent, clients: await openClients(relay, ca) };
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

/** The relay's cost over `run()`: CPU seconds of relay and agent, or the relay's instructions. */
async function cost(target, run) {
  const { relay, agent } = target;
  if (opts.callgrind) {
    zero(relay.pid);
    await run();
    return { relay: dumpInstructions(relay.pid, target.dir), agent: 0 };
  }
  const pids = [relay.pid, agent.pid ?? process.pid];
  const before = pids.map(cpuSeconds);
  await run();
  const [relayCpu, agentCpu] = pids.map((pid, k) => cpuSeconds(pid) - before[k]);
  return { relay: relayCpu * 1e6, agent: agentCpu * 1e6 };
}

async function measure(target) {
  let outcome;
  const started = performance.now();
  const spent = await cost(target, async () => (outcome = await drive(target.clients, CALLS)));
  const seconds = (performance.now() - started) / 1000;
  const { latencies, errors } = outcome;
  latencies.sort();
  const at = (q) => latencies[Math.min(CALLS - 1, Math.floor(q * CALLS))];
  return {
    relayPerCall: spent.relay / CALLS,
    agentUs: spent.agent / CALLS,
    callsPerS: CALLS / seconds,
    p50: at(0.5),
    p99: at(0.99),
    p999: at(0.999),
    errors,
  };
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

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const FIGURES = ['relayPerCall', 'agentUs', 'callsPerS', 'p50', 'p99', 'p999', 'errors'];
const relayFigure = (value) =>
  opts.callgrind ? `${(value / 1e3).toFixed(0)}k instr` : `${value.toFixed(0)} us`;

function printTable(results) {
  const unit = opts.callgrind ? 'instructions' : 'CPU';
  console.log(
    `\n${opts.rounds} rounds x ${CALLS} calls, ${opts.clients} clients, ${opts.endpoint} endpoint, ` +
      `${opts.agent} agent; medians; load ${loadavg()
        .map((v) => v.toFixed(1))
        .join(' ')}`,
  );
  console.log(
    `| build | relay ${unit}/call | agent CPU/call | calls/s | p50 ms | p99 ms | p99.9 ms | errors |`,
  );
  console.log('| ----- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, runs] of Object.entries(results)) {
    const m = Object.fromEntries(FIGURES.map((f) => [f, median(runs.map((r) => r[f]))]));
    const agent = opts.agent === 'sim' || opts.callgrind ? '-' : `${m.agentUs.toFixed(0)} us`;
    console.log(
      `| ${name} | ${relayFigure(m.relayPerCall)} | ${agent} | ${m.callsPerS.toFixed(0)} | ` +
        `${m.p50.toFixed(2)} | ${m.p99.toFixed(2)} | ${m.p999.toFixed(2)} | ${m.errors} |`,
    );
  }
}

function printRatio(results) {
  const names = Object.keys(results);
  if (names.length < 2) return;
  const [a, b] = names.map((n) => results[n]);
  const ratios = a.map((r, k) => b[k].relayPerCall / r.relayPerCall);
  const listed = ratios.map((r) => r.toFixed(2)).join(', ');
  console.log(
    `\nrelay cost per call, ${names[1]}/${names[0]}: ${median(ratios).toFixed(2)}x (rounds: ${listed})`,
  );
}

/** Bytes allocated per call in each target's relay, by package and by function. */
async function allocations(targets) {
  for (const target of targets) {
    const session = await inspector(target.relay.logFile);
    const profile = await sampleAllocations(session, () => drive(target.clients, CALLS));
    session.close();
    const byPackage = aggregate(profile.head, (frame) => where(frame.url));
    const byFunction = aggregate(
      profile.head,
      (frame) =>
        `${frame.functionName || '(anonymous)'} ${where(frame.url, true)}:${frame.lineNumber + 1}`,
    );
    const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
    console.log(`\n${target.name}: ${(total / CALLS / 1024).toFixed(1)} KiB allocated per call\n`);
    console.log(`${table(byPackage, CALLS, 15)}\n\n${table(byFunction, CALLS, 30)}`);
  }
}

async function run(targets) {
  for (const target of targets) await drive(target.clients, Number(opts.warmup));
  if (opts.alloc) return allocations(targets);
  if (opts.callgrind) {
    // Instrumented code is translated anew: a short warm-up again before counting.
    for (const target of targets) instrument(target.relay.pid);
    for (const target of targets) await drive(target.clients, Math.min(CALLS, 200));
  }
  const results = Object.fromEntries(targets.map((t) => [t.name, []]));
  const from = hrtimeUs();
  for (let round = 0; round < Number(opts.rounds); round++) {
    for (const target of targets) results[target.name].push(await measure(target));
    const line = targets.map(
      (t) => `${t.name} ${relayFigure(results[t.name].at(-1).relayPerCall)}`,
    );
    console.log(`round ${round + 1}: ${line.join(', ')}`);
  }
  keepWindow([from, hrtimeUs()]);
  printTable(results);
  printRatio(results);
}

const node = targetNode(opts.node);
setTargetNode(node.path);
const dir = mkdtempSync(join(tmpdir(), 'bench-relay-calls-'));
const builds = { this: join(await snapshotBuild(dir, node.sqlitePackage), 'dist') };
if (opts.compare) {
  const other = snapshotOther(join(opts.compare, 'bundle/main.js'), dir, node.sqlitePackage);
  builds.other = join(other, '../..');
}
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
    await target.relay.stop();
  }
}
