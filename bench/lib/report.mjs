/** The results: goals met or not, and the Markdown and JSON written to bench/results/. */

const MiB = 1024 * 1024;

const fmt = {
  rps: (v) => (v == null ? '-' : v >= 100 ? String(Math.round(v)) : v.toFixed(1)),
  ms: (v) =>
    v == null ? '-' : v >= 100 ? String(Math.round(v)) : v >= 10 ? v.toFixed(1) : v.toFixed(2),
  ratio: (v) =>
    v == null || !Number.isFinite(v) ? '-' : v >= 100 ? `${Math.round(v)}x` : `${v.toFixed(2)}x`,
  mib: (v) => (v == null ? '-' : (v / MiB).toFixed(1)),
};

/** What the service's figure is compared with, per target role. */
function reference(target) {
  if (target.role === 'service') return undefined;
  if (target.role === 'service-1m' || target.role === 'service-b') {
    return { label: `${target.role}/service`, invert: true };
  }
  return { label: 'service/this', invert: false };
}

export function ratioText(summary, scenario, target, stores) {
  const ref = reference(target);
  if (!ref) return '';
  const row = summary[scenario]?.[target.name];
  const storesToShow = target.store ? [target.store] : stores;
  return storesToShow
    .map((store) => {
      const service = summary[scenario]?.[`service@${store}`];
      if (!row?.rps || !service?.rps) return undefined;
      const value = ref.invert ? row.rps / service.rps : service.rps / row.rps;
      return target.store ? fmt.ratio(value) : `${store} ${fmt.ratio(value)}`;
    })
    .filter(Boolean)
    .join(', ');
}

export function evaluateGoals({ summary, stores, services, others = [], hasTarget }) {
  const rps = (scenario, name) => summary[scenario]?.[name]?.rps;
  const rows = [];
  const add = (goal, perStore) => rows.push({ goal, ...perStore });
  const ratioGoal = (goal, scenario, baseline, min, stretch) => {
    const perStore = {};
    for (const store of stores) {
      const name = baseline.includes('@') ? baseline.replace('@store', `@${store}`) : baseline;
      if (!hasTarget(name)) continue;
      const service = rps(scenario, `service@${store}`);
      const other = rps(scenario, name);
      const value = service && other ? service / other : undefined;
      perStore[store] = {
        value,
        text: fmt.ratio(value),
        met: value !== undefined && value >= min,
        stretchMet: stretch ? value !== undefined && value >= stretch : undefined,
      };
    }
    add(goal, perStore);
  };
  ratioGoal(
    'POST c=16 vs raw-each (a1) >= 1.0x (stretch 1.5x)',
    'post-c16',
    'raw-each@store',
    1,
    1.5,
  );
  ratioGoal('POST c=16 vs raw-group (a2) >= 0.3x', 'post-c16', 'raw-group@store', 0.3);
  ratioGoal('POST c=16 vs json-server, empty >= 10x', 'post-c16', 'json-server-empty', 10);
  ratioGoal('POST c=16 vs json-server, 100k plants >= 300x', 'post-c16', 'json-server-100k', 300);
  ratioGoal('POST c=16 vs Prism >= 3x', 'post-c16', 'prism', 3);
  // The design's own stack doing the same storage work, nothing else (nest-floor).
  ratioGoal('POST c=16 vs nest-floor (a3) >= 0.8x', 'post-c16', 'nest-floor@store', 0.8);
  ratioGoal('GET /plants/{id} c=16 vs nest-floor (a3) >= 0.8x', 'get-c16', 'nest-floor@store', 0.8);
  ratioGoal('80/20 mix c=16 vs nest-floor (a3) >= 0.8x', 'mix-c16', 'nest-floor@store', 0.8);

  const perStore = (compute) =>
    Object.fromEntries(stores.map((s) => [s, compute(s)]).filter(([, v]) => v));
  add(
    'POST c=16 with the preloaded rows >= 0.9x the empty store',
    perStore((store) => {
      if (!hasTarget(`service-1m@${store}`)) return undefined;
      const value = rps('post-c16', `service-1m@${store}`) / rps('post-c16', `service@${store}`);
      return { value, text: fmt.ratio(value), met: value >= 0.9 };
    }),
  );
  add(
    'p99 <= 10 ms at POST c=16',
    perStore((store) => {
      const value = summary['post-c16']?.[`service@${store}`]?.p99;
      return value == null ? undefined : { value, text: `${fmt.ms(value)} ms`, met: value <= 10 };
    }),
  );
  add(
    'p99 at POST c=16 <= 2x nest-floor (a3)',
    perStore((store) => {
      const ours = summary['post-c16']?.[`service@${store}`]?.p99;
      const floor = summary['post-c16']?.[`nest-floor@${store}`]?.p99;
      if (ours == null || floor == null) return undefined;
      const value = ours / floor;
      return {
        value,
        text: `${fmt.ms(ours)} / ${fmt.ms(floor)} ms, ${fmt.ratio(value)}`,
        met: value <= 2,
      };
    }),
  );
  add(
    'peak RSS <= 1.2x nest-floor (a3), same flags and cgroup',
    perStore((store) => {
      const ours = services.find((s) => s.store === store && s.role === 'service')?.peakRss;
      const floor = others.find((s) => s.store === store && s.role === 'nest-floor')?.peakRss;
      if (!ours || !floor) return undefined;
      const value = ours / floor;
      return {
        value,
        text: `${fmt.mib(ours)} / ${fmt.mib(floor)} MiB, ${fmt.ratio(value)}`,
        met: value <= 1.2,
      };
    }),
  );
  add(
    'no errors at POST c=64 (non-2xx, socket errors, timeouts)',
    perStore((store) => {
      const row = summary['post-c64']?.[`service@${store}`];
      if (!row) return undefined;
      const value = row.non2xx + row.errors + row.timeouts;
      return { value, text: `${value} of ${row.responses}`, met: value === 0 };
    }),
  );
  add(
    'peak RSS <= 150 MiB over the whole run',
    perStore((store) => {
      const peaks = services.filter((s) => s.store === store && s.peakRss).map((s) => s.peakRss);
      if (peaks.length === 0) return undefined;
      const value = Math.max(...peaks);
      return { value, text: `${fmt.mib(value)} MiB`, met: value <= 150 * MiB };
    }),
  );
  add(
    'ready (first 200 from /health) <= 1.5 s after start',
    perStore((store) => {
      const starts = services.filter((s) => s.store === store && s.readyMs);
      if (starts.length === 0) return undefined;
      const value = Math.max(...starts.map((s) => s.readyMs));
      return { value, text: `${Math.round(value)} ms`, met: value <= 1500 };
    }),
  );
  return rows;
}

/** The pod's CPU limit as the report words it (`resources.limits.cpu`, or `--pod-cpu`). */
function cpuQuota({ cpus, cpuWhy }) {
  if (cpuWhy) return `no CPU quota (${cpuWhy})`;
  return cpus > 0 ? `a CPU quota of ${cpus} CPU (\`resources.limits.cpu\`)` : 'no CPU quota';
}

function podLine(pod) {
  if (!pod) return "Every process under test ran with Node's defaults for this host (`--pod off`).";
  const others = " json-server and Prism ran with Node's defaults for this host.";
  const flags = pod.nodeArgs?.length
    ? ` and \`node ${pod.nodeArgs.join(' ')}\` (\`nodeArgs\`)`
    : '';
  const nodeOptions = pod.nodeOptions ? `NODE_OPTIONS=${pod.nodeOptions}` : 'no NODE_OPTIONS';
  const options = `${nodeOptions} (\`nodeOptions\`)${flags}`;
  if (pod.why) {
    return `The service and the raw baselines (nest-floor among them) ran with the chart's ${options}, but without its memory limit (${pod.why}): V8 sized its heap from the host, not as in the pod; ${cpuQuota(pod)}.${others}`;
  }
  return (
    `The service and the raw baselines (nest-floor among them) ran as the chart's pod runs the service: each in a memory ` +
    `cgroup of its own limited to ${pod.memory} (\`resources.limits.memory\`, from which Node ` +
    `sizes V8's heap), ${cpuQuota(pod)} and with ${options}.${others}`
  );
}

export function markdown({ meta, scenarios, targets, summary, goals, services, others, stores }) {
  const lines = [];
  const out = (line = '') => lines.push(line);
  out(`# Plant Store benchmark, ${meta.date}`);
  out();
  out(
    `${meta.machine.cpu}, ${meta.machine.cores} cores, ${meta.machine.memGiB} GiB, Linux ${meta.machine.kernel}, ` +
      `targets on **Node ${meta.machine.node}**` +
      (meta.machine.benchNode && meta.machine.benchNode !== meta.machine.node
        ? ` (the bench and its load generator on ${meta.machine.benchNode})`
        : '') +
      `. Data folder on **${meta.machine.fsType}**` +
      (meta.postgres
        ? `; PostgreSQL ${meta.postgres.version} (fsync ${meta.postgres.fsync}, synchronous_commit ${meta.postgres.synchronousCommit}, data on ${meta.postgres.fsType}), same machine.`
        : '; no PostgreSQL server.'),
  );
  out(
    `${meta.settings.warmupS ?? 0} s of unmeasured load per target, then ` +
      `${meta.settings.rounds} round(s) of ${meta.settings.durationS} s per target and scenario, interleaved ` +
      `(A B C, A B C, ...); figures are medians over the rounds. Load average ${meta.loadBefore} before, ` +
      `${meta.loadAfter} after; run took ${Math.round(meta.elapsedS)} s.`,
  );
  out(podLine(meta.pod));
  out();
  if (goals.length) {
    out('## Goals');
    out();
    out(`| goal | ${stores.join(' | ')} |`);
    out(`| --- | ${stores.map(() => '---').join(' | ')} |`);
    for (const row of goals) {
      const cells = stores.map((store) => {
        const cell = row[store];
        if (!cell) return 'n/a';
        const stretch = cell.stretchMet === undefined ? '' : cell.stretchMet ? ', stretch met' : '';
        return `${cell.text} ${cell.met ? '(met' + stretch + ')' : '(**not met**)'}`;
      });
      out(`| ${row.goal} | ${cells.join(' | ')} |`);
    }
    out();
  }
  for (const scenario of scenarios) {
    const rows = targets.filter((t) => summary[scenario.id]?.[t.name]);
    if (rows.length === 0) continue;
    out(`## ${scenario.title}`);
    out();
    out(
      '| target | req/s | CPU us/req | p50 ms | p90 ms | p99 ms | non-2xx / errors | ratio | req/s per round | CPU us per round |',
    );
    out('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |');
    for (const target of rows) {
      const r = summary[scenario.id][target.name];
      out(
        `| ${target.label} | ${fmt.rps(r.rps)} | ${fmt.rps(r.cpuUs)} | ${fmt.ms(r.p50)} | ${fmt.ms(r.p90)} | ${fmt.ms(r.p99)} | ` +
          `${r.non2xx} / ${r.errors + r.timeouts} | ${ratioText(summary, scenario.id, target, stores)} | ${r.rpsPerRound.join(', ')} | ${(r.cpuUsPerRound ?? []).join(', ')} |`,
      );
    }
    out();
  }
  out('## Start and memory');
  out();
  out('| process | ready after start | peak RSS (VmHWM) MiB | log written MiB |');
  out('| --- | ---: | ---: | ---: |');
  for (const s of [...services, ...others]) {
    const ready = s.readyMs ? `${Math.round(s.readyMs)} ms` : '-';
    out(`| ${s.label} | ${ready} | ${fmt.mib(s.peakRss)} | ${fmt.mib(s.logBytes)} |`);
  }
  out();
  out(
    'Ratios: "service/this" is the service\'s req/s over the row\'s, on the same store (both stores for ' +
      'the store-less baselines); "service-1m/service" is the preloaded store over the empty one. ' +
      'Latencies are per request, from the load generator (autocannon, in its own process), sub-millisecond. ' +
      "CPU us/req: the target process's utime + stime over the run (all its threads) per response; " +
      'contention on a shared machine moves it far less than req/s.',
  );
  out();
  return lines.join('\n');
}
