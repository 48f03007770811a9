import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import type { RelayClusterConfig } from '../config/relay-config.js';

// ioredis loads only here (a single replica never needs it). No offline queue: while Redis is
// unreachable a request waits at most RELAY_REDIS_TIMEOUT_MS. Logs never name the URL (password).
export async function connectRedis(
  config: RelayClusterConfig,
  logger: Logger,
  onReady: () => void,
): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const log = new RateLimitedLog(logger);
  const redis = new Redis(config.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: config.redisTimeoutMs,
    connectTimeout: Math.max(config.redisTimeoutMs, 2000),
    retryStrategy: (attempt) => Math.min(100 * attempt, 2000),
  });
  redis.on('ready', () => {
    logger.info('connected to Redis');
    onReady();
  });
  redis.on('error', (error: Error) => {
    log.warn({ reason: reasonOf(error) }, 'Redis unreachable: shared state unavailable');
  });
  return redis;
}

/** A failed write's metric label: Redis's error word (OOM when full), socket code, or `timeout`. */
export function failureCode(error: unknown): string {
  const cause = firstCause(error);
  const { code, message } = cause instanceof Error ? (cause as Error & { code?: unknown }) : {};
  const word = message?.split(' ')[0] ?? '';
  if (/^[A-Z]{2,16}$/.test(word)) return word;
  if (typeof code === 'string' && /^E[A-Z]{2,16}$/.test(code)) return code;
  return message?.includes('timed out') ? 'timeout' : 'other';
}

/** The error's code (ECONNREFUSED...) or its first words, without any address or password. */
export function reasonOf(failure: Error & { code?: unknown }): string {
  const error = firstCause(failure) as Error & { code?: unknown };
  if (typeof error.code === 'string') return error.code;
  return error.message.replace(/redis(s)?:\/\/\S+/g, 'redis://…').slice(0, 120);
}

/** A MULTI that Redis discarded (EXECABORT) failed for its commands' errors: the first one. */
function firstCause(error: unknown): unknown {
  const previous = (error as { previousErrors?: unknown[] } | undefined)?.previousErrors;
  return previous?.[0] ?? error;
}
