/**
 * What running the relay as several replicas costs a call: tools/call latency (p50, p99) and
 * the relays' CPU time per call, for three variants interleaved round after round:
 *   single  one relay without Redis, the agent and the client on it;
 *   same    two relays sharing Redis, the client on the relay holding the agent connection;
 *   cross   the same two relays, the client on the other one (forwarded over HTTP).
 * Calls are sequential (one in flight), so latency is the path's, not a queue's. CPU is
 * utime + stime from /proc/<pid>/stat of every relay of the variant, over its calls; Redis
 * commands per call from its INFO (background heartbeats included).
 *
 *   npm run build && node bench/relay-replicas.mjs [--rounds 5] [--calls 400]
 * Needs redis-server (bash .ci/install-redis.sh). Figures: median over the rounds.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, calls: { type: 'string', default: '400' } },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const TICK = 100; // USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s
const token = () => randomBytes(24).toString('base64url');
const digest = (t) => `sha256:${createHash('sha256').update(t).digest('hex')}`;
const agentToken = token();
const clientToken = token();
const children = [];

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', ''],
    {
      stdio: 'ignore',
    },
  );
  children.push(child);
  // Accepting connections: ioredis would retry anyway, but the replicas' readiness waits for it.
  for (;;) {
    const up = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(true)).on('error', () =>
        resolve(false),
      );
      socket.on('connect', () => socket.end());
    });
    if (up) return { url: `redis://127.0.0.1:${port}`, port };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function startRelay(redisUrl) {
  const [port, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH,
    RELAY_HOST: '127.0.0.1',
    RELAY_PORT: String(port),
    RELAY_HEALTH_CHECK_PORT: String(health),
    RELAY_METRICS_PORT: String(metrics),
    RELAY_LOG_LEVEL: 'warn',
    RELAY_AGENTS: JSON.stringify({ lab: digest(agentToken) }),
    RELAY_CLIENTS: JSON.stringify({ me: { tokens: digest(clientToken), agents: ['lab'] } }),
    ...(redisUrl && { RELAY_REDIS_URL: redisUrl }),
  };
  const child = spawn(process.execPath, ['dist/bundle/relay-server.js'], { env, stdio: 'ignore' });
  children.push(child);
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${health}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { port, pid: child.pid };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** An agent that answers initialize and every tools/call at once. */
function startAgent(port) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/agent/v1/connect`, {
    headers: { Authorization: `Bearer ${agentToken}` },
  });
  ws.on('open', () =>
    ws.send(
      JSON.stringify({
        type: 'hello',
        agent: { id: 'bench', version: '0' },
        servers: [{ name: 'echo', state: 'up', tools: [] }],
      }),
    ),
  );
  ws.on('message', (data) => {
    const { server, message } = JSON.parse(data.toString());
    if (message.id === undefined) return;
    const result =
      message.method === 'initialize'
        ? {
            protocolVersion: '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 'b', version: '0' },
          }
        : { content: [{ type: 'text', text: 'ok' }] };
    ws.send(
      JSON.stringify({ type: 'rpc', server, message: { jsonrpc: '2.0', id: message.id, result } }),
    );
  });
}

const headers = (session) => ({
  Authorization: `Bearer ${clientToken}`,
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  ...(session && { 'Mcp-Session-Id': session }),
});
const post = (port, body, session) =>
  fetch(`http://127.0.0.1:${port}/mcp/lab/echo`, {
    method: 'POST',
    headers: headers(session),
    body: JSON.stringify(body),
  });

async function session(port) {
  for (;;) {
    const response = await post(port, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} });
    const id = response.headers.get('mcp-session-id');
    await response.arrayBuffer();
    if (id) return id;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const cpu = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
};

async function measure({ port, pids, sessionId, redisPort }) {
  const times = [];
  const commands = redisPort && (await redisInfo(redisPort, 'total_commands_processed:'));
  const before = pids.map(cpu);
  for (let i = 1; i <= CALLS; i++) {
    const started = performance.now();
    const response = await post(
      port,
      { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'x' } },
      sessionId,
    );
    await response.arrayBuffer();
    times.push(performance.now() - started);
  }
  const spent = pids.map(cpu).reduce((sum, after, k) => sum + after - before[k], 0);
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  // Less the INFO that read the count before (it counts itself).
  const redisPerCall = redisPort
    ? ((await redisInfo(redisPort, 'total_commands_processed:')) - commands - 1) / CALLS
    : 0;
  return { p50: at(0.5), p99: at(0.99), cpuPerCall: (spent / CALLS) * 1e6, redisPerCall };
}

/** One field of Redis's INFO (raw RESP over TCP: the bench needs no client library). */
function redisInfo(port, field) {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', () => socket.write('INFO\r\n'));
    socket.on('error', reject).on('data', (chunk) => {
      text += chunk;
      const length = Number(/^\$(\d+)\r\n/.exec(text)?.[1]);
      if (!(text.length >= text.indexOf('\n') + 1 + length)) return;
      socket.end();
      resolve(Number(new RegExp(`^${field}(\\d+)`, 'm').exec(text)?.[1] ?? 0));
    });
  });
}

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

try {
  const single = await startRelay(undefined);
  const redis = await startRedis();
  const holder = await startRelay(redis.url);
  const other = await startRelay(redis.url);
  startAgent(single.port);
  startAgent(holder.port);
  const variants = {
    single: { port: single.port, pids: [single.pid], sessionId: await session(single.port) },
    same: {
      port: holder.port,
      pids: [holder.pid, other.pid],
      sessionId: await session(holder.port),
      redisPort: redis.port,
    },
    cross: {
      port: other.port,
      pids: [holder.pid, other.pid],
      sessionId: await session(other.port),
      redisPort: redis.port,
    },
  };
  const results = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, variant] of Object.entries(variants))
      results[name].push(await measure(variant));
  }
  console.log(`${ROUNDS} rounds x ${CALLS} sequential calls, medians (Node ${process.version})`);
  console.log('variant  p50 ms  p99 ms  relay CPU us/call  Redis commands/call');
  for (const [name, runs] of Object.entries(results)) {
    const [p50, p99, cpuUs, redisCalls] = ['p50', 'p99', 'cpuPerCall', 'redisPerCall'].map((k) =>
      median(runs.map((r) => r[k])),
    );
    console.log(
      `${name.padEnd(8)} ${p50.toFixed(3).padStart(6)}  ${p99.toFixed(3).padStart(6)}  ${cpuUs.toFixed(0).padStart(17)}  ${redisCalls.toFixed(2).padStart(19)}`,
    );
  }
} finally {
  for (const child of children) child.kill('SIGKILL');
}
