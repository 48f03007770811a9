import { pino, type Logger } from 'pino';
import type { LogLevel } from '../../config/shared/log-levels.js';
import type { TracingConfig } from '../../config/shared/tracing-env.js';
import { tracing } from '../tracing/tracing.js';

export interface LoggerConfig {
  logLevel: LogLevel;
  /** NO_COLOR is set and not empty: JSON lines even on a terminal. */
  noColor: boolean;
  /** Tracing on: each line written in a span carries its trace_id and span_id. */
  tracing?: TracingConfig | undefined;
}

// Headers never logged, secrets "[redacted]". JSON lines go out in batches of 8 KiB or 100 ms,
// and at exit (pino's flush): a write per line cost a request 2-14 us under load.
export function createLogger(config: LoggerConfig, fd = 1): Logger {
  const options = {
    level: config.logLevel,
    ...(config.tracing ? { mixin: () => tracing()?.logIds() ?? {} } : {}),
    base: { pid: process.pid },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', '*.token', '*.password'],
      censor: '[redacted]',
    },
  };
  if (process.stdout.isTTY && !config.noColor) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        // Synchronous in its worker: a line read there is on the terminal, so the start-up
        // banner (written after a flush) comes after it.
        options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid', sync: true },
      },
    });
  }
  const batched = { minLength: 8192, periodicFlush: 100, contentMode: 'buffer' as const };
  const destination = pino.destination({ dest: fd, sync: false, ...batched });
  // Buffers: as text, sonic-boom copied the whole batch again for each line (~4 KB of garbage).
  const writeBuffer = destination.write.bind(destination) as unknown as (b: Buffer) => boolean;
  destination.write = (line: string) => writeBuffer(Buffer.from(line));
  jsonDestinations.add(destination);
  return pino(options, destination);
}

/** The asynchronous stdout destinations of the JSON loggers, for writeAfterLog. */
const jsonDestinations = new WeakSet<object>();

type Destination = { write(text: string): boolean; flushSync?(): void };
const destinationOf = (log: Logger) => Reflect.get(log, pino.symbols.streamSym) as Destination;

// Raw text to stdout after every line logged so far, which a plain write would overtake (the
// banner came before the "listening" line): JSON joins the same queue, pretty waits a flush.
export function writeAfterLog(logger: Logger, text: string): void {
  const destination = destinationOf(logger);
  if (jsonDestinations.has(destination)) destination.write(text);
  else logger.flush(() => process.stdout.write(text));
}

/** The lines still in the batch, written now: for an exit that skips Node's 'exit' event. */
export function flushLogSync(logger: Logger): void {
  destinationOf(logger).flushSync?.();
}

// The start-up line's logger: with a port configured as 0 that line alone says the bound
// port, so it is written at info whatever the level, short of `silent`.
export function startUpLogger(logger: Logger, configuredPorts: number[]): Logger {
  const picked = configuredPorts.includes(0);
  if (!picked || logger.level === 'silent' || logger.isLevelEnabled('info')) return logger;
  return logger.child({}, { level: 'info' });
}
