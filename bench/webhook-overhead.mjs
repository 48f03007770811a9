/**
 * What the plant webhook costs POST /plants: the service with one receiver configured against
 * the service with none, POST /plants at 16 connections, runs interleaved (none, one, none,
 * one, ...) on a fresh store each, medians and their ratio. The receiver answers 204 from this
 * process; the load comes from this process too (plain node:http with keep-alive), so the
 * figures are for comparing the two variants, not absolute throughput (bench/run.mjs does that).
 *
 *   npm run build && node bench/webhook-overhead.mjs [--rounds 5] [--duration 4] [--stores sqlite,pg]
 *   pg uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a new database per run).
 *   --dist-b <dir>: a copy of an older build's dist/ (in a folder with the package.json and a
 *     node_modules link, so its imports resolve), run with one receiver as `one-b` in the
 *     same rounds (none, one, one-b, ...): a change measured before and after in one run.
 *   --profile <dir>: the `one` (and `one-b`) runs under node --cpu-prof; each thread's profile is
 *     summarized into <dir>/webhook-<store>-<variant>-<round>.md with the requests it served.
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
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

let delivered = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    delivered++;
    res.writeHead(204).end();
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}/plant/webhook`;

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
  const child = spawn(process.execPath, [...args, join(dist, 'main.js')], { env, stdio: 'ignore' });
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
function cpuSeconds(pid, mainThread = false) {
  const stat = mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`;
  if (!existsSync(stat)) throw new Error(`the service (pid ${pid}) is not running`);
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
      const profileDir =
        values.profile && variant !== 'none'
          ? mkdtempSync(join(tmpdir(), 'bench-webhook-prof-'))
          : undefined;
      const service = await startService(
        store,
        variant !== 'none',
        variant === 'one-b' ? values['dist-b'] : undefined,
        profileDir,
      );
      fsType ||= execFileSync('stat', ['-f', '-c', '%T', service.dir]).toString().trim();
      const pid = service.child.pid;
      const [serviceCpu0, mainCpu0, benchCpu0] = [
        cpuSeconds(pid),
        cpuSeconds(pid, true),
        process.cpuUsage(),
      ];
      const { rps, errors, served } = await load(service);
      // CPU per request, to tell the service's own cost from the bench's (load and receiver).
      const serviceUs = ((cpuSeconds(pid) - serviceCpu0) * 1e6) / served;
      const mainUs = ((cpuSeconds(pid, true) - mainCpu0) * 1e6) / served;
      const benchCpu = process.cpuUsage(benchCpu0);
      const benchUs = (benchCpu.user + benchCpu.system) / served;
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
              title: `POST /plants c=${connections} with one webhook receiver (${variant}${thread}), ${store}, round ${round + 1}`,
              requests: served,
              note: 'Includes start-up and shutdown; per-request figures divide by the 200s served.',
            }),
          );
        }
      } else service.child.kill('SIGKILL');
      results[variant].push(rps);
      console.log(
        `${store} round ${round + 1} ${variant}: ${rps.toFixed(0)} req/s${errors ? `, ${errors} non-200` : ''}; CPU per request: service ${serviceUs.toFixed(0)} us (main thread ${mainUs.toFixed(0)}), bench ${benchUs.toFixed(0)} us; load average ${loadavg()[0].toFixed(2)}`,
      );
    }
  }
  const [none, one] = [median(results.none), median(results.one)];
  console.log(
    `${store} (data folder on ${fsType}): median ${none.toFixed(0)} req/s without a receiver, ${one.toFixed(0)} with one: ${(one / none).toFixed(3)}x`,
  );
  if (results['one-b']) {
    const oneB = median(results['one-b']);
    console.log(
      `${store}: one-b (${values['dist-b']}) median ${oneB.toFixed(0)} req/s: ${(oneB / none).toFixed(3)}x of none`,
    );
  }
}
console.log(`notices delivered to the receiver during the runs: ${delivered}`);
receiver.close();
