/** A run's figures summarized into the report, written as results/<output>.md and .json. */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { BENCH } from './paths.mjs';
import { evaluateGoals, markdown } from './report.mjs';
import { loadAverage } from './workspace.mjs';
import { summarize } from './stats.mjs';

export function buildReport({ opts, meta, stores, targets, scenarios, results, started }) {
  const summary = Object.fromEntries(
    Object.entries(results).map(([id, byTarget]) => [
      id,
      Object.fromEntries(Object.entries(byTarget).map(([name, runs]) => [name, summarize(runs)])),
    ]),
  );
  const services = [];
  const others = [];
  for (const t of targets) {
    const row = {
      label: t.label,
      role: t.role,
      store: t.store,
      readyMs: t.proc.readyMs,
      peakRss: t.proc.peakRss(),
    };
    if (t.role.startsWith('service')) {
      services.push(row);
      if (t.migrationStart)
        services.push({
          ...t.migrationStart,
          label: `${t.label}, first start (empty)`,
          role: t.role,
          store: t.store,
        });
      row.logBytes = statSync(t.proc.logFile).size;
    } else others.push(row);
  }
  meta.loadAfter = loadAverage();
  meta.elapsedS = (Date.now() - started) / 1000;
  const goals = opts.baselines
    ? evaluateGoals({
        summary,
        stores,
        // service-b (--compare) is an experiment, not the service.
        services: services.filter((s) => s.role !== 'service-b'),
        others,
        hasTarget: (name) => targets.some((t) => t.name === name),
      })
    : [];
  const report = {
    meta,
    stores,
    scenarios,
    targets: targets.map(({ role, store, name, label }) => ({ role, store, name, label })),
    summary,
    goals,
    services,
    others,
    runs: results,
  };
  return report;
}

export function writeReport(report, output) {
  const text = markdown(report);
  // An absolute --output (e.g. /tmp/x) keeps one-off runs out of results/.
  const base = isAbsolute(output) ? output : join(BENCH, 'results', output);
  mkdirSync(dirname(base), { recursive: true });
  writeFileSync(`${base}.md`, text);
  writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${text}`);
  console.log(`written: ${base}.md and .json`);
}
