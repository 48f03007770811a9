import type { Logger } from 'pino';

/**
 * The logger for the start-up ("listening") line. When a port was configured as 0 (any free
 * port) that line is the only place the bound port is said, so it is written at info even when
 * the level is warn, error or fatal; `silent` still means nothing at all.
 */
export function startUpLogger(logger: Logger, configuredPorts: number[]): Logger {
  const picked = configuredPorts.includes(0);
  if (!picked || logger.level === 'silent' || logger.isLevelEnabled('info')) return logger;
  return logger.child({}, { level: 'info' });
}
