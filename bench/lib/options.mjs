/** The command line and BENCH_* environment of `npm run bench`, and its --help. */
import { parseArgs } from 'node:util';
import { SCENARIOS } from './scenarios.mjs';

const HELP = `npm run bench [-- options]

  --node VERSION     the Node that runs the targets: 24 (default, BENCH_NODE; installed into
                     ~/.cache/plant-store-tools/node24 as CI does, better-sqlite3 rebuilt
                     for it there) or 20 / current (the Node running the bench)
  --quick            1 round of 1 s runs, no preloaded-store scenario (results/quick.*)
  --rounds N         rounds of every run (BENCH_ROUNDS, default 3)
  --duration S       seconds per run (BENCH_DURATION, default 3)
  --warmup S         seconds of unmeasured load per target before the first round, split
                     over the scenarios (BENCH_WARMUP, default 10; 0 with --quick)
  --preload N        rows preloaded for the large-store scenario (BENCH_PRELOAD, default
                     1000000; 0 skips it)
  --stores LIST      sqlite,pg (BENCH_STORES); pg needs BENCH_DATABASE_URL, DATABASE_URL or
                     the local server of .ci/start-postgres.sh
  --scenarios LIST   post-c1,post-c16,post-c64,get-c16,mix-c16 (default all)
  --no-baselines     the service alone
  --baselines LIST   only these baselines: raw-each,raw-group,nest-floor,json-server,prism
                     (default all; json-server and prism start together)
  --service FILE     the service's main.js (default: a copy of dist/ taken at the start)
  --compare FILE     also run another build's main.js (service-b), for before/after figures
                     (a comma-separated list: service-b, service-c, ...)
  --compare-args=A  node options for service-b (and for --profile), e.g.
                     --compare-args=--max-semi-space-size=4;
                     alone, service-b is this build with those options
  --compare-env=E    environment for service-b, K=V[,K=V] (e.g. DATABASE_POOL_MAX=10);
                     alone, service-b is this build with it
  --profile          instead: profile the service under POST c=16 (--cpu-prof) and summarize;
                     with --scenarios get-c16 or mix-c16, under GET /plants/{id} or the 80/20
                     mix (results/profile-<store>-get.md, -mix.md)
  --perf             with --profile: perf's CPU-time samples of every thread of the bundle
                     instead of V8's profile (results/perf-<store>.md; needs perf, root)
  --profile-target T  with --profile: service (default) or nest-floor (results/profile-nest-floor-
                     <store>[-get].md), to set the service's profile beside the floor's
  --ids MODE         spread (default: ids all over the int64 key space, as clients choose
                     them) or sequential (ascending: every insert at the B-tree's right edge)
  --pod MEMORY       run the service and the raw baselines as the chart's pod runs the
                     service: each in a memory cgroup of its own limited to MEMORY and a CPU
                     quota (needs root), with the chart's nodeOptions as NODE_OPTIONS and its
                     nodeArgs (default: the chart's resources.limits.memory; off: none of it,
                     Node's defaults for the host); json-server and Prism always run with the
                     host's defaults
  --pod-cpu CPUS     the pod's CPU quota instead of the chart's resources.limits.cpu (0: none)
  --node-options=O   NODE_OPTIONS for the pod instead of the chart's nodeOptions ('' for none)
  --keep             keep the data folder (bench/.data/<run>) and its logs
  --output NAME      write results/NAME.md and .json (default latest, or quick with --quick);
                     an absolute path (/tmp/x) writes /tmp/x.md and .json
`;

export function options() {
  const { values } = parseArgs({
    options: {
      node: { type: 'string' },
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      preload: { type: 'string' },
      stores: { type: 'string' },
      scenarios: { type: 'string' },
      'no-baselines': { type: 'boolean' },
      baselines: { type: 'string' },
      service: { type: 'string' },
      compare: { type: 'string' },
      'compare-args': { type: 'string' },
      'compare-env': { type: 'string' },
      profile: { type: 'boolean' },
      'profile-target': { type: 'string' },
      perf: { type: 'boolean' },
      keep: { type: 'boolean' },
      pod: { type: 'string' },
      'pod-cpu': { type: 'string' },
      'node-options': { type: 'string' },
      output: { type: 'string' },
      ids: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const env = process.env;
  const quick = Boolean(values.quick);
  const number = (flag, name, fallback) => {
    const value = Number(flag ?? env[name] ?? fallback);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: not a number`);
    return value;
  };
  return {
    quick,
    node: values.node ?? env.BENCH_NODE ?? '24',
    rounds: Math.max(1, Math.round(number(values.rounds, 'BENCH_ROUNDS', quick ? 1 : 3))),
    durationS: number(values.duration, 'BENCH_DURATION', quick ? 1 : 3),
    warmupS: number(values.warmup, 'BENCH_WARMUP', quick ? 0 : 10),
    preload: Math.round(number(values.preload, 'BENCH_PRELOAD', quick ? 0 : 1_000_000)),
    stores: (values.stores ?? env.BENCH_STORES ?? 'sqlite,pg').split(',').map((s) => s.trim()),
    scenarios: (values.scenarios ?? SCENARIOS.map((s) => s.id).join(',')).split(','),
    baselines: !values['no-baselines'],
    baselineList: (values.baselines ?? 'raw-each,raw-group,nest-floor,json-server,prism').split(
      ',',
    ),
    service: values.service,
    compare:
      values.compare ?? (values['compare-args'] || values['compare-env'] ? 'same' : undefined),
    compareArgs: (values['compare-args'] ?? '').split(' ').filter(Boolean),
    compareEnv: Object.fromEntries(
      (values['compare-env'] ?? '')
        .split(',')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    ),
    profile: Boolean(values.profile),
    profileTarget: values['profile-target'] ?? 'service',
    perf: Boolean(values.perf),
    profileS: number(undefined, 'BENCH_PROFILE_SECONDS', quick ? 3 : 10),
    keep: Boolean(values.keep),
    pod: values.pod ?? env.BENCH_POD,
    podCpus: values['pod-cpu'] === undefined ? undefined : Number(values['pod-cpu']),
    nodeOptions: values['node-options'],
    output: values.output ?? (quick ? 'quick' : 'latest'),
    ids: values.ids ?? env.BENCH_IDS ?? 'spread',
  };
}
