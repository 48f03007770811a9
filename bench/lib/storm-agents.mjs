/**
 * A fleet of simulated agents in one process (run by relay-storm.mjs as a child, with IPC):
 * each connects as the real agent does (TLS, WebSocket `/agent/v1/connect`, bearer token, a
 * 30 s handshake timeout, `hello` first) and reconnects with the agent's own backoff
 * (dist/common/retry/backoff.js) whenever its connection closes or fails.
 *
 * The parent sends { type: 'connect', url } (all agents, now, to `url`) and
 * { type: 'target', url } (where reconnects go from now on); this process reports
 * { target, connected, onTarget, opens, failures: { <reason>: n } } every 100 ms.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setInterval, setTimeout } from 'node:timers';
import { WebSocket } from 'ws';

// `tokensFile`: a JSON array of agent tokens; this process runs one agent per token.
const [tokensFile, caFile, dist] = process.argv.slice(2);
const tokens = JSON.parse(readFileSync(tokensFile, 'utf8'));
const { Backoff, DEFAULT_BACKOFF } = await import(
  pathToFileURL(join(dist, 'common/retry/backoff.js')).href
);
const ca = readFileSync(caFile, 'utf8');
const HANDSHAKE_TIMEOUT_MS = 30_000; // the agent's default (agent-relay-client.ts)
const STABLE_MS = 10_000; // a connection that lasted this long resets the backoff
const hello = JSON.stringify({
  type: 'hello',
  agent: { id: 'storm', version: '0' },
  servers: [
    { name: 'echo', state: 'up', tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
  ],
});

let target;
let connected = 0;
/** Open connections to the current target (the reconnects' relay). */
let onTarget = 0;
let opens = 0;
const failures = {};

/** Why a connection attempt failed, in a few words the report can count. */
function reasonOf(error) {
  if (/handshake has timed out|Opening handshake/i.test(error.message)) return 'client timeout';
  return error.code ?? error.message.slice(0, 40);
}

function agent(token) {
  const backoff = new Backoff(DEFAULT_BACKOFF);
  const connect = () => {
    const ws = new WebSocket(target, {
      headers: { Authorization: `Bearer ${token}` },
      ca,
      perMessageDeflate: false,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      // Not from 127.0.0.1: with Redis that is the replicas' own address, which takes no turns
      // (Linux routes all of 127/8 to loopback; macOS would need an alias).
      family: 4,
      localAddress: '127.0.0.2',
    });
    let openedAt;
    const url = target;
    ws.on('open', () => {
      openedAt = Date.now();
      connected++;
      if (url === target) onTarget++;
      opens++;
      ws.send(hello);
    });
    ws.on('error', (error) => {
      if (openedAt === undefined) failures[reasonOf(error)] = (failures[reasonOf(error)] ?? 0) + 1;
    });
    ws.on('close', () => {
      if (openedAt !== undefined) {
        connected--;
        if (url === target) onTarget--;
        if (Date.now() - openedAt >= STABLE_MS) backoff.reset();
      }
      setTimeout(connect, backoff.next());
    });
  };
  return connect;
}

const agents = tokens.map(agent);
process.on('message', (message) => {
  if (message.url !== target) onTarget = 0;
  target = message.url;
  if (message.type === 'connect') for (const connect of agents) connect();
});
setInterval(() => process.send({ target, connected, onTarget, opens, failures }), 100).unref();
process.on('disconnect', () => process.exit(0));
