/**
 * What the plant webhook costs POST /plants: the service with one receiver configured against
 * the service with none, POST /plants at 16 connections, runs interleaved (none, one, none,
 * one, ...) on a fresh store each, medians and their ratio. The receiver answers 204 from a
 * process of its own (lib/webhook-receiver.mjs: in real use it is on another machine), the load
 * comes from this process (plain node:http with keep-alive); all share the machine's cores, so
 * each line also gives the CPU per request of the service (all threads, and its main thread),
 * of the load and of the receiver. The figures compare the variants, not absolute throughput
 * (bench/run.mjs does that).
 *
 *   npm run build && node bench/webhook-overhead.mjs [--rounds 5] [--duration 4] [--stores sqlite,pg]
 *   pg uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a new database per run).
 *   --dist-b <dir>: a copy of an older build's dist/ (in a folder with the package.json and a
 *     node_modules link, so its imports resolve), run with one receiver as `one-b` in the
 *     same rounds (none, one, one-b, ...): a change measured before and after in one run.
 *   --profile <dir>: every run under node --cpu-prof; each thread's profile is
 *     summarized into <dir>/webhook-<store>-<variant>-<round>.md with the requests it served.
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  openSync,
  mkdtempSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { summarizeProfile } from './lib/cpuprofile.mjs';

const ROOT = join(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '4' },
    stores: { type: 'string', default: 'sqlite' },
    connections: { type: 'string', default: '16' },
    'dist-b': { type: 'string' },
    profile: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const duration = Number(values.duration) * 1000;
const connections = Number(values.connections);
const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

// The receiver runs in a process of its own: its CPU is reported apart, not as the bench's.
const receiver = spawn(process.execPath, [join(import.meta.dirname, 'lib/webhook-receiver.mjs')], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const ask = (message) =>
  new Promise((resolve) => {
    receiver.once('message', resolve);
    receiver.send(message);
  });
const receiverPort = await new Promise((resolve) =>
  receiver.once('message', (message) => resolve(message.port)),
);
const receiverUrl = `http://127.0.0.1:${receiverPort}/plant/webhook`;

async function newDatabase() {
  const name = `bench_wh_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function startService(store, withReceiver, dist = join(ROOT, 'dist'), profileDir) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhook-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config/mcp-servers.json'), '{"mcpServers":{}}');
  const [port, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const token = randomBytes(24).toString('hex');
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NO_COLOR: '1',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    SERVICE_HEALTH_CHECK_PORT: String(health),
    SERVICE_METRICS_PORT: String(metrics),
    SERVICE_CONFIG_DIR: join(dir, 'config'),
    SERVICE_LOG_LEVEL: 'warn',
    DATA_DIR: join(dir, 'data'),
    API_TOKENS: token,
    ...(store === 'pg' ? { DATABASE_URL: await newDatabase() } : {}),
    ...(withReceiver
      ? {
          WEBHOOK_URLS: receiverUrl,
          WEBHOOK_SECRETS: `whsec_${randomBytes(32).toString('base64')}`,
        }
      : {}),
  };
  const args = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  // Its warnings and errors kept in its folder, to say why a service died mid-run.
  const stderr = openSync(join(dir, 'stderr.log'), 'w');
  const child = spawn(process.execPath, [...args, join(dist, 'main.js')], {
    env,
    stdio: ['ignore', 'ignore', stderr],
  });
  closeSync(stderr);
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`http://127.0.0.1:${health}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, token, dir, child };
}

/** 16 loops of POST /plants with new ids for `duration`; answers 200 per second. */
async function load({ port, token }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let next = 1;
  let ok = 0;
  let other = 0;
  const end = Date.now() + duration;
  const post = () =>
    new Promise((resolve) => {
      const body = `{"id": ${next++}, "name": "bench plant", "tag": "b"}`;
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/plants',
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) ok++;
            else other++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        other++;
        resolve();
      });
      req.end(body);
    });
  const started = Date.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) await post();
    }),
  );
  agent.destroy();
  return { rps: ok / ((Date.now() - started) / 1000), errors: other, served: ok };
}

/** User + system CPU of a process, all its threads (or its main thread: `/task/<pid>`), from /proc. */
function cpuSeconds({ child, dir }, mainThread = false) {
  const pid = child.pid;
  const stat = mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`;
  if (!existsSync(stat)) {
    const log = readFileSync(join(dir, 'stderr.log'), 'utf8').slice(-2000);
    throw new Error(`the service (pid ${pid}) is not running; its stderr ends:\n${log}`);
  }
  const fields = readFileSync(stat, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second here).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const store of values.stores.split(',')) {
  if (store === 'pg' && !pgUrl) {
    console.log('pg: no BENCH_DATABASE_URL or TEST_DATABASE_URL, skipped');
    continue;
  }
  const variants = values['dist-b'] ? ['none', 'one', 'one-b'] : ['none', 'one'];
  const results = Object.fromEntries(variants.map((v) => [v, []]));
  let fsType = '';
  for (let round = 0; round < rounds; round++) {
    for (const variant of variants) {
      const profileDir = values.profile
        ? mkdtempSync(join(tmpdir(), 'bench-webhook-prof-'))
        : undefined;
      const service = await startService(
        store,
        variant !== 'none',
        variant === 'one-b' ? values['dist-b'] : undefined,
        profileDir,
      );
      fsType ||= execFileSync('stat', ['-f', '-c', '%T', service.dir]).toString().trim();
      const [serviceCpu0, mainCpu0, benchCpu0, receiver0] = [
        cpuSeconds(service),
        cpuSeconds(service, true),
        process.cpuUsage(),
        await ask('stats'),
      ];
      const microseconds = () => Number(process.hrtime.bigint() / 1000n);
      const from = microseconds();
      const { rps, errors, served } = await load(service);
      const to = microseconds();
      // CPU per request, to tell the service's own cost from the bench's (load and receiver).
      const serviceUs = ((cpuSeconds(service) - serviceCpu0) * 1e6) / served;
      const mainUs = ((cpuSeconds(service, true) - mainCpu0) * 1e6) / served;
      const benchCpu = process.cpuUsage(benchCpu0);
      const benchUs = (benchCpu.user + benchCpu.system) / served;
      const receiver1 = await ask('stats');
      const receiverUs = (receiver1.cpuUs - receiver0.cpuUs) / served;
      if (profileDir) {
        // A clean exit writes the profile.
        const exited = new Promise((resolve) => service.child.once('exit', resolve));
        service.child.kill('SIGTERM');
        await exited;
        mkdirSync(values.profile, { recursive: true });
        // One profile per thread: CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile, thread 0
        // the main one (the sending worker thread, when there is one, gets its own summary).
        for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
          const thread = file.split('.')[4] === '0' ? '' : '-worker';
          writeFileSync(
            join(values.profile, `webhook-${store}-${variant}${thread}-${round + 1}.md`),
            summarizeProfile(join(profileDir, file), {
              title: `POST /plants c=${connections}, webhook receivers: ${variant}${thread}, ${store}, round ${round + 1}`,
              requests: served,
              // The profile's clock is the monotonic one this process reads too.
              window: [from, to],
              note: `Only the samples of the ${duration / 1000} s of load count (not start-up or shutdown); per-request figures divide by the ${served} 200s served.`,
            }),
          );
        }
      } else service.child.kill('SIGKILL');
      results[variant].push({ rps, mainUs, serviceUs, load: loadavg()[0] });
      console.log(
        `${store} round ${round + 1} ${variant}: ${rps.toFixed(0)} req/s${errors ? `, ${errors} non-200` : ''}; CPU per request: service ${serviceUs.toFixed(0)} us (main thread ${mainUs.toFixed(0)}), load ${benchUs.toFixed(0)} us, receiver ${receiverUs.toFixed(0)} us; load average ${loadavg()[0].toFixed(2)}`,
      );
    }
  }
  const of = (variant, key) => median(results[variant].map((r) => r[key]));
  const loads = Object.values(results).flatMap((rs) => rs.map((r) => r.load));
  console.log(
    `${store} (data folder on ${fsType}), medians of ${rounds} rounds, load average ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}:`,
  );
  for (const variant of variants) {
    const label = variant === 'one-b' ? `one-b (${values['dist-b']})` : variant;
    console.log(
      `  ${label}: ${of(variant, 'rps').toFixed(0)} req/s (${(of(variant, 'rps') / of('none', 'rps')).toFixed(3)}x of none); main thread ${of(variant, 'mainUs').toFixed(0)} us per request (${(of(variant, 'mainUs') / of('none', 'mainUs')).toFixed(2)}x), all threads ${of(variant, 'serviceUs').toFixed(0)} us (${(of(variant, 'serviceUs') / of('none', 'serviceUs')).toFixed(2)}x)`,
    );
  }
}
console.log(`notices delivered to the receiver during the runs: ${(await ask('stats')).delivered}`);
receiver.send('close');
