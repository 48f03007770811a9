import { type DynamicModule, Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from './logger.token.js';

/** Makes the process's pino logger injectable as `@Inject(LOGGER)`. */
@Global()
@Module({})
export class LoggingModule {
  static forRoot(logger: Logger): DynamicModule {
    return {
      module: LoggingModule,
      providers: [{ provide: LOGGER, useValue: logger }],
      exports: [LOGGER],
    };
  }
}
