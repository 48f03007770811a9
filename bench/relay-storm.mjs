/**
 * A reconnect storm: `--agents` simulated agents (bench/lib/storm-agents.mjs: TLS, the agent's
 * headers, handshake timeout and backoff) hold connections to relay A; A is killed (-9) and
 * every agent reconnects to relay B, which runs as the chart's pod (its relay CPU limit and 512Mi,
 * when this machine lets us make cgroups), as a Service would send them to a surviving replica.
 * Reported: the time from the kill until all agents are back, B's refusals by reason (its
 * TLS handshake timeouts among them), the agents' failed attempts, B's CPU and peak RSS, and the
 * latencies of a bystander (bench/lib/bystander.mjs: another tenant calling a tool through B)
 * in the 10 s before the kill and during the storm.
 *
 *   npm run build && node bench/relay-storm.mjs [--agents 5000] [--cpu <CPUs>] [--dist dist]
 *     [--resident 0] [--relay-env K=V] [--relay-args "<B's node flags, after the chart's>"]
 *   --relay-env K=V: both relays' settings, over the chart's relayServer.settings (TLS
 *     handshakes at 250 a second; RELAY_TLS_MAX_HANDSHAKES_PER_SECOND=0 lifts the cap).
 *   --resident N: B holds N agents of its own from before the kill, as a surviving replica
 *     does (its code warm, its memory partly taken); B's connection caps are raised to fit.
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startBystander } from './lib/bystander.mjs';
import { TOKENS, makeCa, startRelay } from './lib/relay-path.mjs';
import { ROOT } from './lib/paths.mjs';
import { cpuMicros } from './lib/process-cpu.mjs';
import { limitCpu, throttling } from './lib/cpu-quota.mjs';
import { chartPod, enablePod } from './lib/pod.mjs';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '5000' },
    resident: { type: 'string', default: '0' },
    names: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '2' },
    cpu: { type: 'string' }, // default: the chart's relay CPU limit
    dist: { type: 'string', default: 'dist' },
    profile: { type: 'boolean', default: false },
    'relay-args': { type: 'string', default: '' },
    'relay-env': { type: 'string', multiple: true, default: [] },
  },
});
const AGENTS = Number(values.agents);
const RESIDENT = Number(values.resident);
const DIST = resolve(values.dist);
const dir = mkdtempSync(join(tmpdir(), 'relay-storm-'));
const ca = makeCa(join(dir, 'ca'));
// `--names` agents (deployments), each with its own token and AGENTS / NAMES connections (pods).
const NAMES = Math.min(Number(values.names), AGENTS);
const FLEET_TOKENS = Array.from({ length: NAMES }, () => randomBytes(24).toString('base64url'));
const digest = (t) => `sha256:${createHash('sha256').update(t).digest('hex')}`;
const FLEET_ENV = {
  RELAY_AGENTS: JSON.stringify({
    ...Object.fromEntries(FLEET_TOKENS.map((t, i) => [`a${i}`, digest(t)])),
    lab: digest(TOKENS.agent),
  }),
  RELAY_CLIENTS: JSON.stringify({ me: { tokens: digest(TOKENS.client), agents: ['lab'] } }),
  RELAY_MAX_CONNECTIONS: String(AGENTS + RESIDENT + 1000),
  RELAY_MAX_CONNECTIONS_PER_ADDRESS: '0',
  RELAY_MAX_CONNECTIONS_PER_AGENT: String(Math.ceil((AGENTS + RESIDENT) / NAMES) + 16),
  RELAY_LOG_LEVEL: 'warn',
  ...chartPod(ROOT).relaySettings,
  ...Object.fromEntries(values['relay-env'].map((pair) => pair.split(/=(.*)/s, 2))),
};

/** `count` agents in worker processes; `state()` sums their latest reports. */
function startFleet(count, label) {
  const workers = Number(values.workers);
  const reports = new Array(workers).fill({ connected: 0, opens: 0, failures: {} });
  const children = reports.map((_, i) => {
    // Agent k is a pod of deployment k % NAMES; worker i runs every agent k with k % workers == i.
    const mine = Array.from({ length: count }, (_, k) => k).filter((k) => k % workers === i);
    const tokensFile = join(dir, `tokens-${label}-${i}.json`);
    writeFileSync(tokensFile, JSON.stringify(mine.map((k) => FLEET_TOKENS[k % NAMES])));
    const child = fork(join(ROOT, 'bench/lib/storm-agents.mjs'), [tokensFile, ca.caFile, DIST]);
    child.on('message', (report) => (reports[i] = report));
    return child;
  });
  let target;
  const send = (message) => {
    target = message.url;
    children.forEach((child) => child.send(message));
  };
  const state = () => {
    const failures = {};
    for (const r of reports)
      for (const [k, n] of Object.entries(r.failures)) failures[k] = (failures[k] ?? 0) + n;
    const sum = (key) => reports.reduce((s, r) => s + (r[key] ?? 0), 0);
    const onTarget = reports.reduce((s, r) => s + (r.target === target ? r.onTarget : 0), 0);
    return { connected: sum('connected'), onTarget, failures };
  };
  return { send, state, stop: () => children.forEach((child) => child.kill()) };
}

async function until(condition, timeoutMs, what, progress) {
  const deadline = Date.now() + timeoutMs;
  for (let polls = 1; !condition(); polls++) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    if (polls % 100 === 0) console.log(`waiting for ${what}: ${JSON.stringify(progress())}`);
    await sleep(50);
  }
}

async function refusals(relay) {
  const text = await fetch(relay.metricsUrl).then((r) => r.text());
  const counts = {};
  for (const m of text.matchAll(/^relay_connections_refused_total\{reason="([^"]+)"\} (\d+)/gm))
    counts[m[1]] = Number(m[2]);
  return counts;
}

/**
 * B's event loop delay (prom-client's, from monitorEventLoopDelay) since the last scrape, in ms:
 * whether the bystander's slow calls waited in B or in this machine's other processes.
 */
async function loopDelay(relay) {
  const text = await fetch(relay.metricsUrl).then((r) => r.text());
  const ms = (name) =>
    Math.round(
      Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(text)?.[1]) *
        1000,
    );
  return { p99: ms('p99'), max: ms('max') };
}

/** Relays A and B (B as the chart's pod: its memory limit, its CPU quota), and the bystander. */
async function startRelays() {
  const pod = chartPod(ROOT);
  const relay = (name, more = {}) =>
    startRelay({
      name,
      dist: DIST,
      entry: 'bundle/relay-server.js',
      ca,
      dir,
      env: FLEET_ENV,
      ...more,
    });
  const a = await relay('relay-a');
  const podNote = enablePod({ ...pod, memory: pod.relayMemory });
  // A CPU profile of B (written where B runs, `dir`, when it stops): bench/profile-summary.mjs.
  const profile = values.profile ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];
  const nodeArgs = [...profile, ...values['relay-args'].split(' ').filter(Boolean)];
  const b = await relay('relay-b', { inPod: true, nodeArgs });
  const cpuNote = limitCpu(b.pid, Number(values.cpu ?? pod.relayCpus), 'storm');
  const bystander = await startBystander({ relay: b, ca });
  return { a, b, bystander, notes: { cpu: cpuNote, memory: podNote ?? pod.relayMemory } };
}

/** `count` agents connected to `relay`, under `label`. */
async function connectFleet(count, label, relay) {
  const fleet = startFleet(count, label);
  fleet.send({ type: 'connect', url: `wss://localhost:${relay.port}/agent/v1/connect` });
  const on = `${count} ${label} agents on ${relay.name}`;
  await until(() => fleet.state().onTarget === count, 300_000, on, fleet.state);
  return fleet;
}

/** What B spent since `before` (from `snapshot(b)`), and what its quota held back. */
function spentSince(b, before) {
  const now = snapshot(b);
  const throttled = now.throttled && {
    times: now.throttled.times - before.throttled.times,
    ms: Math.round(now.throttled.ms - before.throttled.ms),
  };
  return { cpuS: (now.cpuMs - before.cpuMs) / 1000, throttled: throttled ?? '-' };
}

const snapshot = (b) => ({ cpuMs: cpuMicros(b.pid) / 1000, throttled: throttling(b.pid, 'storm') });

async function main() {
  const { a, b, bystander, notes } = await startRelays();
  const resident = RESIDENT > 0 ? await connectFleet(RESIDENT, 'resident', b) : undefined;
  const fleet = await connectFleet(AGENTS, 'moving', a);
  // The bystander's baseline: 10 s of the fleet connected and idle, before the kill.
  await sleep(10_000);
  console.log(`${AGENTS} agents connected to relay A; killing it`);
  fleet.send({ type: 'target', url: `wss://localhost:${b.port}/agent/v1/connect` });
  const [failuresBefore, before] = [fleet.state().failures, snapshot(b)];
  await loopDelay(b); // starts B's delay histogram afresh
  const [killedAt, killedAtMs] = [Date.now(), performance.now()];
  process.kill(a.pid, 'SIGKILL');
  const back = `${AGENTS} agents back on B`;
  await until(() => fleet.state().onTarget === AGENTS, 600_000, back, fleet.state);
  const [backS, backAt] = [(Date.now() - killedAt) / 1000, performance.now()];
  const result = {
    agents: AGENTS,
    resident: RESIDENT,
    backS,
    relayB: {
      ...notes,
      ...spentSince(b, before),
      peakRssMiB: Math.round(b.peakRss() / 2 ** 20),
      eventLoopDelayMs: await loopDelay(b),
    },
    refusedByB: await refusals(b),
    agentFailures: Object.fromEntries(
      Object.entries(fleet.state().failures).map(([k, n]) => [k, n - (failuresBefore[k] ?? 0)]),
    ),
    bystander: {
      before: bystander.between(killedAtMs - 10_000, killedAtMs),
      during: bystander.between(killedAtMs, backAt),
    },
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.profile) console.log(`B's CPU profile: ${dir}/*.cpuprofile`);
  [fleet, resident].forEach((f) => f?.stop());
  await bystander.stop();
  await b.stop();
}

await main();
process.exit(0);
