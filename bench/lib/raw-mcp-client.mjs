/**
 * A Streamable HTTP client cheap enough to load a relay from the same 2 cores: one keep-alive
 * TLS connection, one request at a time, the request written as one string and the answer
 * read by Content-Length or chunks. No SDK, no undici: what it costs is not the relay's.
 */
import { connect } from 'node:tls';

const HEAD_END = Buffer.from('\r\n\r\n');

/** Status, lower-cased headers and where the head ends; undefined until it is all there. */
function parseHead(buffer) {
  const end = buffer.indexOf(HEAD_END);
  if (end < 0) return undefined;
  const lines = buffer.toString('latin1', 0, end).split('\r\n');
  const headers = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(lines[0].split(' ')[1]), headers, bodyAt: end + 4 };
}

/** A chunked body from `at`: { body, next } when its last chunk is there, else undefined. */
function readChunks(buffer, at) {
  const parts = [];
  for (let pos = at; ;) {
    const lineEnd = buffer.indexOf('\r\n', pos);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buffer.toString('latin1', pos, lineEnd), 16);
    if (size === 0) {
      if (buffer.length < lineEnd + 4) return undefined;
      return { body: Buffer.concat(parts).toString('utf8'), next: lineEnd + 4 };
    }
    if (buffer.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
    pos = lineEnd + 2 + size + 2;
  }
}

/** One whole answer at the start of `buffer`: { answer, next }, or undefined for more bytes. */
export function parseAnswer(buffer) {
  const head = parseHead(buffer);
  if (!head) return undefined;
  const { status, headers, bodyAt } = head;
  if (headers['transfer-encoding'] === 'chunked') {
    const chunks = readChunks(buffer, bodyAt);
    return chunks && { answer: { status, headers, body: chunks.body }, next: chunks.next };
  }
  const next = bodyAt + Number(headers['content-length'] ?? 0);
  if (buffer.length < next) return undefined;
  const body = buffer.toString('utf8', bodyAt, next);
  return { answer: { status, headers, body }, next };
}

export class RawMcpClient {
  #socket;
  #buffer = Buffer.alloc(0);
  #waiting;
  sessionId;

  /** `target`: { port, ca, path, token }. */
  constructor(target) {
    this.target = target;
    this.prefix =
      `POST ${target.path} HTTP/1.1\r\nHost: localhost\r\n` +
      `Authorization: Bearer ${target.token}\r\nContent-Type: application/json\r\n` +
      'Accept: application/json, text/event-stream\r\n';
  }

  /** A new connection; the relay closes one idle past its keep-alive timeout. */
  connect() {
    return new Promise((resolve, reject) => {
      const { port, ca } = this.target;
      const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, resolve);
      this.#socket = socket;
      this.#buffer = Buffer.alloc(0);
      socket.setNoDelay(true);
      socket.on('error', reject);
      socket.on('data', (chunk) => this.#onData(chunk));
      socket.on('close', () => {
        const waiting = this.#waiting;
        this.#waiting = undefined;
        waiting?.reject(new Error('connection closed'));
      });
    });
  }

  #onData(chunk) {
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : chunk;
    const parsed = parseAnswer(this.#buffer);
    if (!parsed) return;
    this.#buffer = this.#buffer.subarray(parsed.next);
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.resolve(parsed.answer);
  }

  /** POSTs one JSON text; resolves with { status, headers, body }. */
  async post(json) {
    if (this.#socket.destroyed || !this.#socket.writable) await this.connect();
    const session = this.sessionId ? `Mcp-Session-Id: ${this.sessionId}\r\n` : '';
    const length = Buffer.byteLength(json);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#socket.write(`${this.prefix}${session}Content-Length: ${length}\r\n\r\n${json}`);
    });
  }

  /** initialize, then notifications/initialized, as an MCP client starts a session. */
  async initialize() {
    const init = await this.post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'bench', version: '0' },
        },
      }),
    );
    this.sessionId = init.headers['mcp-session-id'];
    if (init.status !== 200 || !this.sessionId) {
      throw new Error(`initialize: ${init.status} ${init.body.slice(0, 200)}`);
    }
    await this.post('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  }

  close() {
    this.#socket?.destroy();
  }
}
