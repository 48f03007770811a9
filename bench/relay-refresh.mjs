/**
 * What one rewrite of a replica's Redis entries costs, with its session records and without:
 * ClusterStore.publish (the built dist/) of `--agents` agents and `--sessions` sessions against
 * a redis-server of its own. CPU of this process (the relay's side of `publish` alone, not the
 * rest of a refresh) and of Redis per rewrite, medians over `--rounds`. A replica rewrites
 * everything every 5 s; a change of its agents (connections coming and going) rewrites only the
 * agents, at most every 250 ms.
 *
 *   npm run build && node bench/relay-refresh.mjs [--agents 1000] [--sessions 10000]
 * Needs redis-server (bash .ci/install-redis.sh).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ClusterStore } from '../dist/relay-server/cluster/cluster-store.js';
import { startRedisServer } from './lib/redis-server.mjs';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '1000' },
    sessions: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '20' },
  },
});
const dir = mkdtempSync(join(tmpdir(), 'relay-refresh-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const { socket } = await startRedisServer(dir);
const redis = new Redis({ path: socket });
const store = new ClusterStore(redis, 600_000);

const servers = ['echo'];
const agents = new Map(Array.from({ length: Number(values.agents) }, (_, i) => [`a${i}`, servers]));
const record = (i) => ({ client: `c${i % 50}`, agent: `a${i % agents.size}`, server: 'echo' });
const sessions = new Map(
  Array.from({ length: Number(values.sessions) }, (_, i) => [randomUUID(), record(i)]),
);

/** Redis's own CPU so far, in ms (INFO cpu). */
async function redisCpuMs() {
  const info = await redis.info('cpu');
  const seconds = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1]);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1000;
}

async function measure(label, held) {
  const publish = () => store.publish('https://10.0.0.7:8443', agents, held);
  await publish();
  const relayCpu = [];
  const redisCpu = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    const [cpu, redisBefore] = [process.cpuUsage(), await redisCpuMs()];
    await publish();
    const used = process.cpuUsage(cpu);
    relayCpu.push((used.user + used.system) / 1000);
    redisCpu.push((await redisCpuMs()) - redisBefore);
  }
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1].toFixed(1);
  console.log(`| ${label} | ${median(relayCpu)} ms | ${median(redisCpu)} ms |`);
}

console.log(`| ${agents.size} agents | relay's CPU | Redis's CPU |\n| --- | ---: | ---: |`);
await measure(`and ${sessions.size} sessions`, sessions);
await measure('alone (a change of agents)', new Map());
redis.disconnect();
process.exit(0);
