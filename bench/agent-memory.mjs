/**
 * The agent's memory under the floods of test/agent-relay-budgets.e2e-spec.ts, whose bound
 * (peak RSS under 350 MiB) is a pass/fail line, not a figure: this measures it, for this build
 * and optionally another, interleaved round after round on the image's Node 24, each round a
 * new process (agent-memory.scenario.ts through vitest, with the test's fixtures):
 *   idle    RSS with the three MCP servers up and the relay connected;
 *   start   peak RSS (VmHWM) up to then;
 *   stdin   peak while a child that reads nothing gets 40 x 4 MB notifications;
 *   send    peak while an MCP server logs 60 x 3 MB to a relay that stopped reading;
 *   test    the largest of the three: what the e2e test compares with 350.
 * --breakdown preloads lib/memory-sampler.mjs: heap, external and ArrayBuffer memory at each
 * phase's highest sampled RSS, and whether the tracing SDK was loaded (it must not be).
 *
 *   npm run build && node bench/agent-memory.mjs [--rounds 5] [--node 24|20|current]
 *     [--compare <other checkout>]... [--breakdown] [--output <file.md>]
 * Figures: medians over the rounds (min-max), MiB.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { targetNode } from './lib/node-runtime.mjs';
import { ROOT } from './lib/paths.mjs';
import { median } from './lib/stats.mjs';
import { snapshotBuild, snapshotOther } from './lib/workspace.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    node: { type: 'string', default: '24' },
    compare: { type: 'string', multiple: true, default: [] },
    breakdown: { type: 'boolean', default: false },
    output: { type: 'string' },
  },
});
const node = targetNode(values.node);
const dataRoot = mkdtempSync(join(tmpdir(), 'bench-agent-memory-'));
const targets = [
  {
    label: 'this build',
    main: join(await snapshotBuild(dataRoot, node.sqlitePackage), 'dist/bundle/main.js'),
  },
];
for (const [i, other] of values.compare.entries()) {
  const dir = resolve(other);
  const bundle = join(dir, 'dist/bundle/main.js');
  const main = snapshotOther(
    existsSync(bundle) ? bundle : dir,
    join(dataRoot, `other-${i}`),
    node.sqlitePackage,
  );
  targets.push({ label: other, main });
}
const out = join(dataRoot, 'rounds.jsonl');
const PHASES = ['idle', 'start', 'stdin', 'send', 'test'];

function runRound(target, round) {
  const file = join(dataRoot, `round-${round}-${targets.indexOf(target)}.json`);
  const run = spawnSync(
    node.path,
    [
      join(ROOT, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--config',
      'bench/agent-memory.vitest.config.ts',
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: {
        ...process.env,
        // The scenario starts the service and its MCP servers with the Node running vitest.
        PATH: `${dirname(node.path)}${delimiter}${process.env.PATH}`,
        AGENT_MEMORY_MAIN: target.main,
        AGENT_MEMORY_LABEL: target.label,
        AGENT_MEMORY_OUT: file,
        AGENT_MEMORY_SAMPLER: values.breakdown ? join(ROOT, 'bench/lib/memory-sampler.mjs') : '',
      },
    },
  );
  if (run.status !== 0 || !existsSync(file)) {
    // The floods race the agent's ping (30 s) and a deaf child's (40 s): a loaded machine loses.
    const errors = run.stdout.split('\n').filter((line) => /Error|×/.test(line));
    console.log(`round ${round}, ${target.label}: failed, not counted\n${errors.join('\n')}`);
    return;
  }
  const result = JSON.parse(readFileSync(file, 'utf8'));
  result.test = Math.max(result.start, result.stdin, result.send);
  writeFileSync(out, `${JSON.stringify(result)}\n`, { flag: 'a' });
  console.log(
    `round ${round}, ${target.label}: ${PHASES.map((p) => `${p} ${Math.round(result[p])}`).join(', ')}`,
  );
}

const load = [loadavg()[0]];
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const target of targets) runRound(target, round);
  load.push(loadavg()[0]);
}

const results = existsSync(out)
  ? readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
  : [];
const cell = (xs) =>
  `${Math.round(median(xs))} (${Math.round(Math.min(...xs))}-${Math.round(Math.max(...xs))})`;
const lines = [
  `Node ${node.version}, ${values.rounds} rounds, load average ${Math.min(...load).toFixed(1)} to ${Math.max(...load).toFixed(1)}; MiB, median (min-max)`,
  '',
  `| build | ${PHASES.join(' | ')} | rounds |`,
  `| --- | ${PHASES.map(() => '---:').join(' | ')} | ---: |`,
];
for (const { label } of targets) {
  const mine = results.filter((r) => r.label === label);
  if (mine.length === 0) continue;
  lines.push(
    `| ${label} | ${PHASES.map((p) => cell(mine.map((r) => r[p]))).join(' | ')} | ${mine.length} |`,
  );
}
if (values.breakdown) lines.push('', ...breakdownLines(results));
const report = lines.join('\n');
console.log(`\n${report}`);
if (values.output) writeFileSync(values.output, `${report}\n`);

/** Medians of each phase's highest sampled RSS and what it was made of. */
function breakdownLines(rows) {
  const keys = ['rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers'];
  const table = [
    'At the highest sampled RSS of each phase (medians, MiB):',
    '',
    `| build, phase | ${keys.join(' | ')} | tracing SDK loaded |`,
    `| --- | ${keys.map(() => '---:').join(' | ')} | --- |`,
  ];
  for (const { label } of targets) {
    const mine = rows.filter((r) => r.label === label && r.breakdown);
    for (const phase of ['start', 'stdin', 'send']) {
      const at = mine.map((r) => r.breakdown[phase]).filter((b) => b?.rss !== undefined);
      if (at.length === 0) continue;
      const loaded = [...new Set(mine.map((r) => r.breakdown.tracingLoaded))];
      table.push(
        `| ${label}, ${phase} | ${keys.map((k) => Math.round(median(at.map((b) => b[k])))).join(' | ')} | ${loaded.join(', ')} |`,
      );
    }
  }
  return table;
}
