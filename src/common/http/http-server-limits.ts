import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** All request headers must arrive within this time (slowloris); Node's default is 60 s. */
export const HEADERS_TIMEOUT_MS = 10_000;
// Longer than a load balancer's idle timeout (60 s for AWS's ALB and ingress-nginx), so it
// closes first and never sends on a socket we are closing; Node's 5 s default makes them race.
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** A whole request, body included, within this time; the body's own minimum rate cuts first. */
export const REQUEST_TIMEOUT_MS = 90_000;
/** How often Node checks the two timeouts above (its default, 30 s, lets them overrun). */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

const clientErrors = (
  headersTimeoutMs: number,
): Record<string, { status: number; message: string }> => ({
  HPE_HEADER_OVERFLOW: { status: 431, message: 'the request headers are larger than 16 KiB' },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    message: `the request did not arrive in time: headers within ${headersTimeoutMs / 1000} s`,
  },
});
const MALFORMED = { status: 400, message: 'the request is not valid HTTP/1.1' };

/** Responses on a socket not yet finished, and the error answer waiting for them. */
const PENDING = Symbol('pending responses');
const WAITING_ANSWER = Symbol('error answer after the pending responses');
type TrackedSocket = Duplex & { [PENDING]?: number; [WAITING_ANSWER]?: () => void };

// Every listener's limits, and the Error body for what Node refuses before Express sees a
// request (431, 408, malformed), where Node would answer empty. Call before `listen`.
export function applyServerLimits(
  server: Server,
  { headersTimeoutMs = HEADERS_TIMEOUT_MS, keepAliveTimeoutMs = KEEP_ALIVE_TIMEOUT_MS } = {},
): void {
  const errors = clientErrors(headersTimeoutMs);
  server.headersTimeout = headersTimeoutMs;
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    CONNECTIONS_CHECKING_INTERVAL_MS;
  server.on('request', countPendingResponse);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: TrackedSocket) =>
    answerClientError(error, socket, errors),
  );
}

function countPendingResponse(request: IncomingMessage, response: ServerResponse): void {
  const socket = request.socket as TrackedSocket;
  socket[PENDING] = (socket[PENDING] ?? 0) + 1;
  response.once('close', () => {
    socket[PENDING] = (socket[PENDING] ?? 1) - 1;
    if (socket[PENDING] === 0) socket[WAITING_ANSWER]?.();
  });
}

// A valid request followed by bytes that are not HTTP is carried out: its answer goes first
// and the error after it, never an error alone for work that was done.
function answerClientError(
  error: NodeJS.ErrnoException,
  socket: TrackedSocket,
  errors: ReturnType<typeof clientErrors>,
): void {
  // Only HTTP errors (HPE_*, request timeouts) get an answer; anything else (a failed TLS
  // handshake, a reset) is closed at once, as an answer there would hold the socket for good.
  const code = error.code ?? '';
  if (!(code.startsWith('HPE_') || code === 'ERR_HTTP_REQUEST_TIMEOUT') || !socket.writable) {
    socket.destroy();
    return;
  }
  // The parser repeats its error for every later chunk: one answer is enough.
  if (socket[WAITING_ANSWER]) return;
  socket[WAITING_ANSWER] = () => writeErrorAnswer(errors[code] ?? MALFORMED, socket);
  if ((socket[PENDING] ?? 0) === 0) socket[WAITING_ANSWER]();
}

function writeErrorAnswer({ status, message }: typeof MALFORMED, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ error: status, message });
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
    () => socket.destroy(),
  );
}
