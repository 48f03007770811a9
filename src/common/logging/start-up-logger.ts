import type { Logger } from 'pino';

/**
 * The start-up line's logger: with a port configured as 0 that line alone says the bound
 * port, so it is written at info whatever the level, short of `silent`.
 */
export function startUpLogger(logger: Logger, configuredPorts: number[]): Logger {
  const picked = configuredPorts.includes(0);
  if (!picked || logger.level === 'silent' || logger.isLevelEnabled('info')) return logger;
  return logger.child({}, { level: 'info' });
}
