import { type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** All request headers must arrive within this time (slowloris); Node's default is 60 s. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A whole request, body included, within this time; the body's own minimum rate cuts first. */
export const REQUEST_TIMEOUT_MS = 90_000;
/** How often Node checks the two timeouts above (its default, 30 s, lets them overrun). */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

const CLIENT_ERRORS: Record<string, { status: number; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, message: 'the request headers are larger than 16 KiB' },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    message: `the request did not arrive in time: headers within ${HEADERS_TIMEOUT_MS / 1000} s`,
  },
};
const MALFORMED = { status: 400, message: 'the request is not valid HTTP/1.1' };

/**
 * The limits every listener (API, health, metrics) holds its clients to, and the Error body
 * `{error, message}` for what Node refuses before Express sees a request (431, 408, malformed
 * requests), where Node would write an empty answer. Call before `listen`.
 */
export function applyServerLimits(server: Server): void {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    CONNECTIONS_CHECKING_INTERVAL_MS;
  server.on('clientError', answerClientError);
}

function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const response = (socket as Duplex & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  // Only an HTTP error gets an HTTP answer. Anything else (a TLS handshake that failed or timed
  // out, a reset) is closed at once: an answer written into a TLS socket that never finished
  // its handshake is never sent, and would hold the connection open for good.
  if (!isHttpError(error) || !socket.writable || response?.headersSent) {
    socket.destroy();
    return;
  }
  const { status, message } = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
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

/** Errors of Node's HTTP parser (HPE_*) and of its request timeouts. */
function isHttpError(error: NodeJS.ErrnoException): boolean {
  const code = error.code ?? '';
  return code.startsWith('HPE_') || code === 'ERR_HTTP_REQUEST_TIMEOUT';
}
