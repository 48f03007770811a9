import { pino, type Logger } from 'pino';
import type { LogLevel } from '../../config/app-config.js';

/**
 * Structured JSON logs (one object per line) for log collectors; human-readable lines when
 * stdout is a terminal. Request headers are never logged, and `Secret` values print as
 * "[redacted]", so tokens and passwords stay out of the log.
 */
export function createLogger(level: LogLevel): Logger {
  const pretty = process.stdout.isTTY && process.env.NO_COLOR === undefined;
  return pino({
    level,
    base: { pid: process.pid },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', '*.token', '*.password'],
      censor: '[redacted]',
    },
    ...(pretty
      ? {
          transport: {
            target: 'pino-pretty',
            options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' },
          },
        }
      : {}),
  });
}
