/**
 * The relayed path as the relay e2e tests start it: a throwaway CA, the built relay over TLS
 * with one agent (`lab`) and one client (`me`), and the built service as agent `lab` running
 * test/fixtures/mcp-echo-server.mjs as MCP server `echo`; or, with `simAgent`, an agent made
 * here that answers every call at once (what is then measured is the relay alone).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { ROOT } from './paths.mjs';
import { chartPod } from './pod.mjs';
import { freePort, startProcess } from './processes.mjs';

const token = () => randomBytes(24).toString('base64url');
const digest = (t) => `sha256:${createHash('sha256').update(t).digest('hex')}`;
export const TOKENS = { agent: token(), client: token() };
const ECHO_SERVER = join(ROOT, 'test/fixtures/mcp-echo-server.mjs');
/** What the image and the chart set for every process they run: environment and Node's flags. */
const CHART = chartPod(ROOT);
const AS_THE_IMAGE = { NODE_ENV: 'production', NODE_OPTIONS: CHART.nodeOptions };

/** A CA and a certificate for localhost, made with the openssl CLI in `dir`. */
export function makeCa(dir) {
  mkdirSync(dir, { recursive: true });
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    ...['-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Bench CA'],
    ...['-addext', 'basicConstraints=critical,CA:TRUE'],
  );
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    ...['-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'],
    ...['-out', 'server.pem', '-days', '2', '-extfile', 'server.ext'],
  );
  const caFile = join(dir, 'ca.pem');
  return { dir, caFile, ca: readFileSync(caFile, 'utf8') };
}

/**
 * `node <dist>/<entry>` on TLS; its log (info, as the chart sets) goes to a file. `launcher`
 * (e.g. valgrind and its options) runs `node` when given.
 */
/** `count` clients of agent `lab`: `me` (the bench's) last, after others with tokens of their own. */
function clients(count) {
  const others = Array.from({ length: count - 1 }, (_, i) => [
    `tenant${i}`,
    { tokens: digest(token()), agents: ['lab'] },
  ]);
  return Object.fromEntries([
    ...others,
    ['me', { tokens: digest(TOKENS.client), agents: ['lab'] }],
  ]);
}

export async function startRelay({
  name,
  dist,
  entry,
  ca,
  dir,
  nodeArgs = [],
  env = {},
  launcher,
  tenants = 1,
  inPod = false,
}) {
  const [port, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const args = [...CHART.nodeArgs, ...nodeArgs, join(dist, entry)];
  const proc = await startProcess({
    name,
    ...(launcher && { command: launcher.command, args: [...launcher.args, ...args] }),
    ...(!launcher && { args }),
    readyWithinS: launcher ? 600 : 60,
    inPod,
    env: {
      PATH: process.env.PATH,
      ...AS_THE_IMAGE,
      RELAY_HOST: '127.0.0.1',
      RELAY_PORT: String(port),
      RELAY_HEALTH_CHECK_PORT: String(health),
      RELAY_METRICS_PORT: String(metrics),
      RELAY_LOG_LEVEL: 'info',
      RELAY_TLS_CERT_FILE: join(ca.dir, 'server.pem'),
      RELAY_TLS_KEY_FILE: join(ca.dir, 'server.key'),
      RELAY_AGENTS: JSON.stringify({ lab: digest(TOKENS.agent) }),
      RELAY_CLIENTS: JSON.stringify(clients(tenants)),
      ...env,
    },
    cwd: dir,
    logFile: join(dir, `${name}.log`),
    readyUrl: `http://127.0.0.1:${health}/health`,
  });
  const urls = {
    healthUrl: `http://127.0.0.1:${health}/health`,
    metricsUrl: `http://127.0.0.1:${metrics}/metrics`,
  };
  return { ...proc, port, ...urls };
}

/** The built service as agent `lab` of `relay`, with MCP server `echo`. */
export async function startAgent({ name, bundle, ca, dir, relay, nodePath }) {
  const [port, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, `${name}-config`);
  const data = join(dir, `${name}-data`);
  mkdirSync(config, { recursive: true });
  mkdirSync(data, { recursive: true });
  const echo = { command: nodePath, args: [ECHO_SERVER] };
  writeFileSync(join(config, 'mcp-servers.json'), JSON.stringify({ mcpServers: { echo } }));
  return startProcess({
    name,
    args: [...CHART.nodeArgs, join(bundle, 'main.js')],
    env: {
      PATH: process.env.PATH,
      ...AS_THE_IMAGE,
      ...{ HOST: '127.0.0.1', PORT: String(port), SERVICE_HEALTH_CHECK_PORT: String(health) },
      ...{ SERVICE_METRICS_PORT: String(metrics), SERVICE_CONFIG_DIR: config },
      ...{ DATA_DIR: data, SERVICE_REPOS_DIR: data, API_TOKENS: token() },
      SERVICE_AGENT_TOKEN: TOKENS.agent,
      SERVICE_SERVER_URL: `https://localhost:${relay.port}`,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    },
    cwd: dir,
    logFile: join(dir, `${name}.log`),
    readyUrl: `http://127.0.0.1:${health}/health`,
  });
}

/** An agent in this process: says hello with `echo` up and answers every request at once. */
export function startSimAgent({ relay, ca }) {
  const ws = new WebSocket(`wss://localhost:${relay.port}/agent/v1/connect`, {
    headers: { Authorization: `Bearer ${TOKENS.agent}` },
    ca: ca.ca,
    perMessageDeflate: false,
  });
  const echo = { name: 'echo', inputSchema: { type: 'object' } };
  const hello = { type: 'hello', agent: { id: 'sim', version: '0' } };
  ws.on('open', () =>
    ws.send(JSON.stringify({ ...hello, servers: [{ name: 'echo', state: 'up', tools: [echo] }] })),
  );
  ws.on('message', (data) => {
    const { server, message } = JSON.parse(data.toString());
    if (message.id === undefined) return;
    const result =
      message.method === 'initialize'
        ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: echo }
        : { content: [{ type: 'text', text: 'hello' }] };
    ws.send(
      JSON.stringify({ type: 'rpc', server, message: { jsonrpc: '2.0', id: message.id, result } }),
    );
  });
  return { stop: async () => ws.close() };
}

/** Waits until agent `lab` has MCP server `echo` up at the relay. */
export async function untilEchoUp(relay) {
  for (let waited = 0; waited < 600; waited++) {
    const health = await fetch(relay.healthUrl).then(
      (r) => r.json(),
      () => undefined,
    );
    if (health?.details?.agents?.agents?.lab?.serversUp?.includes('echo')) return;
    await sleep(100);
  }
  throw new Error(`agent lab never had echo up at ${relay.name}; see its logs`);
}
