import { pino, type Logger } from 'pino';
import type { LogLevel } from '../../config/app-config.js';

/** The part of the app's or the relay server's config that shapes the logs. */
export interface LoggerConfig {
  logLevel: LogLevel;
  /** NO_COLOR is set: JSON lines even on a terminal. */
  noColor: boolean;
}

/**
 * Structured JSON logs (one object per line) for log collectors; human-readable lines when
 * stdout is a terminal. Request headers are never logged, and `Secret` values print as
 * "[redacted]", so tokens and passwords stay out of the log.
 *
 * Writes are asynchronous (lines written while a write is in flight go out together; pino
 * flushes what is left at exit): a synchronous write per request line cost event-loop time
 * under load (bench/README.md). No minimum buffer size, so a quiet service's lines appear at once.
 */
export function createLogger({ logLevel, noColor }: LoggerConfig): Logger {
  const options = {
    level: logLevel,
    base: { pid: process.pid },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', '*.token', '*.password'],
      censor: '[redacted]',
    },
  };
  if (process.stdout.isTTY && !noColor) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' },
      },
    });
  }
  return pino(options, pino.destination({ dest: 1, sync: false }));
}
