/** The measured part of a run: seed and warm up every target, then the interleaved rounds. */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { SEED_BASE } from './ids.mjs';
import { ROLE_SCENARIOS, SCENARIOS, SEED_COUNT } from './scenarios.mjs';

const TICK_US = 1e6 / 100; // USER_HZ: /proc counts CPU time in 1/100 s on Linux

/** CPU time (user + system, all threads) the process has used, in microseconds. */
function cpuUs(pid) {
  try {
    // Fields after the ")" that ends the command name: utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US;
  } catch {
    return undefined;
  }
}

/** Plants to read back, and a warm-up for the JIT, before the first measured run. */
export async function seedTargets({ targets, load, token, takeBlock }) {
  for (const t of targets) {
    // Seeded targets get the ids the GET runs read; json-server-100k is full already.
    if (t.seeded || t.role !== 'json-server-100k') {
      await load.run({
        url: t.url,
        token,
        kind: 'post',
        connections: 16,
        amount: SEED_COUNT,
        runBase: t.seeded ? SEED_BASE : takeBlock(),
      });
    }
  }
}

/**
 * Unmeasured load before the first round, split over the scenarios run: under the pod's 0.5 CPU
 * V8 optimizes slowly, and the first 3 s rounds cost up to 1.6x the CPU of the later ones.
 */
export async function warmUp({ opts, targets, load, token, takeBlock }) {
  const scenarios = SCENARIOS.filter((s) => opts.scenarios.includes(s.id));
  if (!(opts.warmupS > 0) || scenarios.length === 0) return;
  const duration = Math.max(1, opts.warmupS / scenarios.length);
  for (const t of targets.filter((x) => !x.restart)) {
    for (const scenario of scenarios.filter((s) => ROLE_SCENARIOS[t.role](s))) {
      await load.run({
        url: t.url,
        token,
        kind: scenario.kind,
        connections: scenario.connections,
        duration,
        runBase: takeBlock(),
        readBase: SEED_BASE,
        readCount: SEED_COUNT,
      });
    }
  }
}

/**
 * Every scenario on every target that takes part in it, round after round (A B C, A B C, ...);
 * returns the scenarios run and each target's runs by scenario id.
 */
export async function runRounds({ opts, targets, load, token, takeBlock }) {
  const scenarios = SCENARIOS.filter((s) => opts.scenarios.includes(s.id));
  const results = {};
  for (let round = 1; round <= opts.rounds; round++) {
    for (const scenario of scenarios) {
      for (const t of targets.filter((x) => ROLE_SCENARIOS[x.role](scenario))) {
        if (t.restart) await t.restart();
        const cpuBefore = cpuUs(t.proc.pid);
        const result = await load.run({
          url: t.url,
          token,
          kind: scenario.kind,
          connections: scenario.connections,
          duration: opts.durationS,
          runBase: takeBlock(),
          readBase: SEED_BASE,
          readCount: SEED_COUNT,
        });
        const cpuAfter = cpuUs(t.proc.pid);
        // Contention slows a request but adds little CPU to it: steadier than req/s here.
        if (cpuBefore !== undefined && cpuAfter !== undefined && result.responses) {
          result.cpuUsPerRequest = (cpuAfter - cpuBefore) / result.responses;
        }
        ((results[scenario.id] ??= {})[t.name] ??= []).push(result);
        console.log(
          `[${round}/${opts.rounds}] ${scenario.id.padEnd(8)} ${t.name.padEnd(20)} ` +
            `${String(Math.round(result.rps)).padStart(6)} req/s  p50 ${result.p50?.toFixed(2)} ` +
            `p99 ${result.p99?.toFixed(2)} ms  ${Math.round(result.cpuUsPerRequest ?? NaN)} us CPU  non-2xx ${result.non2xx} errors ${result.errors + result.timeouts}`,
        );
        await sleep(200);
      }
    }
  }
  return { scenarios, results };
}
