/**
 * --profile: the service under load with --cpu-prof, the profile summarized by function; with
 * --perf, `perf record` on the CPU-time clock instead (V8's profiler samples the wall clock, so
 * it charges the store with the fsync a synchronous SQLite commit waits for).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summarizeProfile } from './cpuprofile.mjs';
import { perfRecord } from './perf-record.mjs';
import { RUN_BASE, SEED_BASE } from './ids.mjs';
import { BENCH } from './paths.mjs';
import { SEED_COUNT } from './scenarios.mjs';
import { startRaw, startService } from './targets.mjs';

/**
 * Under POST c=16 (GET /plants/{id} with --scenarios get-c16, the 80/20 mix with mix-c16);
 * results/profile-<store>[-get|-mix].md.
 * `--profile-target nest-floor` profiles the floor instead (results/profile-nest-floor-...), so
 * the two profiles of the same load can be set side by side, library by library. `--keep`
 * keeps the .cpuprofile (bench/.data/<run>/profile-<store>/).
 */
export async function profile({ opts, stores, pgDatabase, token, load, dataRoot, build }) {
  const main =
    opts.compare && opts.compare !== 'same'
      ? opts.compare
      : (opts.service ?? join(build, 'dist/main.js'));
  const only = opts.scenarios.length === 1 ? opts.scenarios[0] : undefined;
  const kind = only === 'get-c16' ? 'get' : only === 'mix-c16' ? 'mix' : 'post';
  const what = { get: 'GET /plants/{id}', mix: '80% GET, 20% POST', post: 'POST /plants' }[kind];
  const floor = opts.profileTarget === 'nest-floor';
  const subject = floor ? 'nest-floor (a3)' : 'the service';
  for (const store of stores) {
    const profDir = join(dataRoot, `profile-${store}`);
    mkdirSync(profDir, { recursive: true });
    const profiler = opts.perf
      ? ['--perf-basic-prof']
      : ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', '250'];
    const nodeArgs = [...opts.compareArgs, ...profiler];
    const databaseUrl = store === 'pg' ? await pgDatabase('svc_prof') : undefined;
    const service = floor
      ? await startRaw({
          name: 'nest-floor',
          script: 'nest-floor.mjs',
          build,
          dir: join(dataRoot, `nest-floor-${store}`),
          token,
          databaseUrl,
          nodeArgs,
        })
      : await startService({
          name: 'service',
          // perf-summary names a frame's package from the bundle's `// <path>` lines.
          main: opts.perf ? main.replace(/dist\/main\.js$/, 'dist/bundle/main.js') : main,
          dir: join(dataRoot, `service-${store}`),
          token,
          databaseUrl,
          nodeArgs,
        });
    await load.run({
      url: service.url,
      token,
      kind: 'post',
      connections: 16,
      amount: SEED_COUNT,
      runBase: SEED_BASE,
    });
    // As the rounds' targets: unmeasured load first, while V8 still optimizes (ids of their own).
    if (opts.warmupS > 0) {
      await load.run({
        url: service.url,
        token,
        kind,
        connections: 16,
        duration: opts.warmupS,
        runBase: 2 * RUN_BASE,
        readBase: SEED_BASE,
        readCount: SEED_COUNT,
      });
    }
    const stopPerf = opts.perf
      ? await perfRecord(service.proc.pid, join(profDir, 'perf.data'))
      : undefined;
    const microseconds = () => Number(process.hrtime.bigint() / 1000n);
    const from = microseconds();
    const result = await load.run({
      url: service.url,
      token,
      kind,
      connections: 16,
      duration: opts.profileS,
      runBase: RUN_BASE,
      readBase: SEED_BASE,
      readCount: SEED_COUNT,
    });
    const to = microseconds();
    await stopPerf?.();
    await service.proc.stop();
    const output = `results/${opts.perf ? 'perf' : 'profile'}-${floor ? 'nest-floor-' : ''}${store}${kind === 'post' ? '' : `-${kind}`}.md`;
    mkdirSync(join(BENCH, 'results'), { recursive: true });
    if (opts.perf) {
      const summary = execFileSync(
        process.execPath,
        [
          join(BENCH, 'perf-summary.mjs'),
          join(profDir, 'perf.data'),
          String(result.responses),
          '30',
        ],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      const header = `# CPU time of ${subject}, ${what} at 16 connections, ${store} (perf, cpu-clock)\n\n${opts.profileS} s at ${Math.round(result.rps)} req/s after ${opts.warmupS} s of warm-up; every thread of the process.\n\n`;
      writeFileSync(join(BENCH, output), header + summary);
      console.log(`\n${header}${summary}\nwritten: bench/${output}`);
      continue;
    }
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no .cpuprofile in ${profDir}`);
    // For profile-summary.mjs on a kept profile (--keep): the measured window and its requests.
    writeFileSync(
      join(profDir, 'window.json'),
      JSON.stringify({ window: [from, to], requests: result.responses }),
    );
    const text = summarizeProfile(join(profDir, file), {
      title: `CPU profile of ${subject}, ${what} at 16 connections, ${store}`,
      requests: result.responses,
      window: [from, to],
      note: `${opts.profileS} s at ${Math.round(result.rps)} req/s (p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms), after ${SEED_COUNT} requests and ${opts.warmupS} s of warm-up; only the samples of the measured ${opts.profileS} s (${result.responses} requests) count. Sampled every 250 us; the load generator shares the 2 cores.`,
    });
    const startup = summarizeProfile(join(profDir, file), {
      title: `Start-up, from the process start to the first 200 from /health (${Math.round(service.proc.readyMs)} ms)`,
      window: [0, service.proc.readyAtUs],
      top: 15,
      sections: ['selfArea', 'self'],
    });
    writeFileSync(
      join(BENCH, output),
      `${text}\n${startup.replace(/^# /, '## ').replace(/^## (?!Start)/gm, '### ')}`,
    );
    console.log(`\n${text}\nwritten: bench/${output}`);
  }
}
