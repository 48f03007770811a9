/**
 * The relay's floor: what Node itself costs a relayed call. Bare `node:https` and `ws` on the
 * relay's TLS certificate, the same ports and variables, one agent connection: a POST's body is
 * parsed, put in an rpc frame with an id of its own, and the agent's answer parsed and written
 * back with the client's id, the session id from `initialize` checked. No token check, limit,
 * log line, metric, Nest or Express: the difference to the relay is what those cost.
 * `node bench/relay-calls.mjs --floor` runs it beside the relay.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttp } from 'node:http';
import { createServer } from 'node:https';
import { WebSocketServer } from 'ws';

const env = process.env;
let agent;
let nextId = 1;
const pending = new Map();
const sessions = new Set();

function answer(response, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  response.end(text);
}

function relay(response, message, headers) {
  const id = nextId++;
  pending.set(id, (reply) => answer(response, 200, { ...reply, id: message.id }, headers));
  agent.send(JSON.stringify({ type: 'rpc', server: 'echo', message: { ...message, id } }));
}

function onPost(request, response, text) {
  const message = JSON.parse(text);
  if (message.method === 'initialize') {
    const session = randomUUID();
    sessions.add(session);
    return relay(response, message, { 'Mcp-Session-Id': session });
  }
  if (!sessions.has(request.headers['mcp-session-id'])) return answer(response, 404);
  if (message.id === undefined) return answer(response, 202);
  relay(response, message);
}

const server = createServer({
  cert: readFileSync(env.RELAY_TLS_CERT_FILE),
  key: readFileSync(env.RELAY_TLS_KEY_FILE),
});
server.on('request', (request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => onPost(request, response, Buffer.concat(chunks).toString('utf8')));
});
const sockets = new WebSocketServer({ server, perMessageDeflate: false });
sockets.on('connection', (socket) => {
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'hello') agent = socket;
    const id = frame.message?.id;
    if (frame.type !== 'rpc' || !pending.has(id)) return;
    pending.get(id)(frame.message);
    pending.delete(id);
  });
});
server.listen(Number(env.RELAY_PORT), env.RELAY_HOST);

const up = () => ({
  details: { agents: { agents: { lab: { serversUp: agent ? ['echo'] : [] } } } },
});
createHttp((_request, response) => answer(response, 200, up())).listen(
  Number(env.RELAY_HEALTH_CHECK_PORT),
  env.RELAY_HOST,
);
