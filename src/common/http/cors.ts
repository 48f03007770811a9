import type {
  CorsOptions,
  CorsOptionsDelegate,
} from '@nestjs/common/interfaces/external/cors-options.interface.js';
import type { CorsOrigins } from '../../config/cors-origins.js';
import { listenerOf, type PortScope } from './port-scope.js';

/**
 * CORS for the API's browser clients on other origins, or undefined when `CORS_ORIGINS` is
 * empty (off: no CORS header is sent, so browsers keep other origins out).
 *
 * No credentials mode: the API takes a bearer token in `Authorization`, never a cookie, so
 * `*` cannot let another site act with a visitor's ambient credentials. `Link` is exposed so a
 * browser client can follow `rel="next"` (a header not on the CORS safelist is hidden from
 * scripts otherwise), and `Retry-After` so it can honour a 429 or 503.
 */
export function corsOptions(origins: CorsOrigins): CorsOptions | undefined {
  if (origins === 'off') return undefined;
  return {
    origin: origins === '*' ? '*' : origins,
    methods: ['GET', 'POST', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type'],
    exposedHeaders: ['Link', 'Retry-After', 'WWW-Authenticate'],
    credentials: false,
    maxAge: 600,
  };
}

/**
 * `options` on the API port only: the health and metrics ports answer no CORS header, so no
 * web page can read server names, pids or metrics through a visitor's browser.
 */
export function apiPortOnly(
  options: CorsOptions,
  ports: () => PortScope,
): CorsOptionsDelegate<{ socket: { localPort?: number } }> {
  return (request, callback) =>
    callback(
      null,
      listenerOf(request.socket.localPort, ports()) === 'api' ? options : { origin: false },
    );
}
