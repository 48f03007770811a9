import { type DynamicModule, Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from '../logging/logger.token.js';

/** What the entry point made before Nest started: the validated config and the logger. */
@Global()
@Module({})
export class CoreModule {
  static forRoot<T>(configToken: symbol, config: T, logger: Logger): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: configToken, useValue: config },
        { provide: LOGGER, useValue: logger },
      ],
      exports: [configToken, LOGGER],
    };
  }
}
