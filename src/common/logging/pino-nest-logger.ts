import type { LoggerService } from '@nestjs/common';
import type { Logger } from 'pino';

/** Nest's start-up narration (~35 lines) is debug detail: at info it buried the banner. */
const START_UP_DETAIL = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
]);

/** The context of Nest's log line for an error thrown while the application is created. */
const START_UP_FAILURE = 'ExceptionHandler';

/** Nest's own log lines (module init, route mapping) through the same pino logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string): void {
    const level = context !== undefined && START_UP_DETAIL.has(context) ? 'debug' : 'info';
    this.logger[level]({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    // Nest logs a start-up failure here and rethrows it; the entry point then logs it as its
    // one "cannot start" line, so this copy is detail.
    const level = context === START_UP_FAILURE ? 'debug' : 'error';
    this.logger[level]({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
  fatal(message: unknown, context?: string): void {
    this.logger.fatal({ context }, String(message));
  }
}
