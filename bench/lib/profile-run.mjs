/** --profile: the service under load with --cpu-prof, the profile summarized by function. */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summarizeProfile } from './cpuprofile.mjs';
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
    const nodeArgs = [
      ...opts.compareArgs,
      '--cpu-prof',
      '--cpu-prof-dir',
      profDir,
      '--cpu-prof-interval',
      '250',
    ];
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
          main,
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
    await service.proc.stop();
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
      note: `${opts.profileS} s at ${Math.round(result.rps)} req/s (p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms), after ${SEED_COUNT} warm-up requests; only the samples of the measured ${opts.profileS} s (${result.responses} requests) count. Sampled every 250 us; the load generator shares the 2 cores.`,
    });
    const startup = summarizeProfile(join(profDir, file), {
      title: `Start-up, from the process start to the first 200 from /health (${Math.round(service.proc.readyMs)} ms)`,
      window: [0, service.proc.readyAtUs],
      top: 15,
      sections: ['selfArea', 'self'],
    });
    mkdirSync(join(BENCH, 'results'), { recursive: true });
    const output = `results/profile-${floor ? 'nest-floor-' : ''}${store}${kind === 'post' ? '' : `-${kind}`}.md`;
    writeFileSync(
      join(BENCH, output),
      `${text}\n${startup.replace(/^# /, '## ').replace(/^## (?!Start)/gm, '### ')}`,
    );
    console.log(`\n${text}\nwritten: bench/${output}`);
  }
}
