import type {
  CorsOptions,
  CorsOptionsDelegate,
} from '@nestjs/common/interfaces/external/cors-options.interface.js';
import type { CorsOrigins } from '../../config/shared/web-origins.js';
import { listenerOf, type PortScope } from './port-scope.js';

// API port only. No credentials: the API takes a bearer token, never a cookie, so `*` is safe.
// `Link` and `Retry-After` are exposed so a script can page and back off.
export function apiPortCors(
  origins: CorsOrigins,
  ports: () => PortScope,
): CorsOptionsDelegate<{ socket: { localPort?: number } }> | undefined {
  if (origins === 'off') return undefined;
  const options: CorsOptions = {
    origin: origins === '*' ? '*' : origins,
    methods: ['GET', 'POST', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type'],
    exposedHeaders: ['Link', 'Retry-After', 'WWW-Authenticate'],
    credentials: false,
    maxAge: 600,
  };
  return (request, callback) =>
    callback(
      null,
      listenerOf(request.socket.localPort, ports()) === 'api' ? options : { origin: false },
    );
}
