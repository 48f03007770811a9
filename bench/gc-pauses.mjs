/**
 * The garbage collector's pauses while the service takes POST /plants at 16 connections: how
 * many, how long (median, p99, max) and how much of the run they stop the main thread. The p99
 * latency of a request is mostly a wait behind one of them. Writes results/gc-pauses.md.
 *
 *   node bench/gc-pauses.mjs [seconds]        (npm run build first; the embedded store)
 *
 * The service runs as in the pod (lib/pod.mjs), with --trace-gc; its log file gets the trace.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_BASE, SEED_BASE } from './lib/ids.mjs';
import { startLoadWorker } from './lib/load.mjs';
import { chartPod, enablePod } from './lib/pod.mjs';
import { startService } from './lib/targets.mjs';

const BENCH = import.meta.dirname;
const ROOT = join(BENCH, '..');
const seconds = Number(process.argv[2] ?? 10);
const TOKEN = 'gc-pauses-token-0123456789abcdefghijklmn';
const TRACE =
  /ms: (Scavenge|Mark-Compact(?: \(reduce\))?|Minor Mark-Sweep)\b[^,]*, ([\d.]+) \/ [\d.]+ ms/;

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

async function main() {
  const chart = chartPod(ROOT);
  const why = enablePod(chart);
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-gc-'));
  const service = await startService({
    name: 'service',
    main: join(ROOT, 'dist/main.js'),
    dir,
    token: TOKEN,
    nodeArgs: ['--trace-gc'],
  });
  const load = startLoadWorker({ url: service.url, token: TOKEN, kind: 'post', connections: 16 });
  try {
    await load.run({ amount: 2_000, runBase: SEED_BASE });
    const before = readFileSync(service.proc.logFile, 'utf8').length;
    const result = await load.run({ duration: seconds, runBase: RUN_BASE });
    await service.proc.stop();
    const pauses = new Map();
    for (const line of readFileSync(service.proc.logFile, 'utf8').slice(before).split('\n')) {
      const match = TRACE.exec(line);
      if (match) pauses.set(match[1], [...(pauses.get(match[1]) ?? []), Number(match[2])]);
    }
    const rows = [...pauses].map(([kind, all]) => {
      const sorted = all.sort((a, b) => a - b);
      const total = sorted.reduce((a, b) => a + b, 0);
      return `| ${kind} | ${sorted.length} | ${percentile(sorted, 0.5).toFixed(2)} | ${percentile(sorted, 0.99).toFixed(2)} | ${sorted.at(-1).toFixed(2)} | ${Math.round(total)} (${((100 * total) / (seconds * 1000)).toFixed(1)} %) |`;
    });
    const text = [
      '# Garbage-collection pauses of the service, POST /plants at 16 connections, sqlite',
      '',
      `${seconds} s at ${Math.round(result.rps)} req/s (p99 ${result.p99.toFixed(2)} ms, ` +
        `max ${result.max.toFixed(2)} ms), after 2000 warm-up requests; ` +
        (why
          ? `no pod memory limit (${why}); `
          : `as in the pod (${chart.memory}, NODE_OPTIONS=${chart.nodeOptions || '(none)'}, ` +
            `node ${chart.nodeArgs.join(' ')}); `) +
        'pauses from `--trace-gc`.',
      '',
      '| collection | count | median ms | p99 ms | max ms | total ms (share of the run) |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
      '',
    ].join('\n');
    writeFileSync(join(BENCH, 'results', 'gc-pauses.md'), text);
    console.log(`${text}\nwritten: bench/results/gc-pauses.md`);
  } finally {
    load.stop();
    await service.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
