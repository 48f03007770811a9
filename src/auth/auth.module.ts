import { type CanActivate, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { makeCounterProvider } from '@willsoto/nestjs-prometheus';
import { API_GUARDS } from '../common/auth/api-guards.token.js';
import { JsonBodyGuard } from '../common/http/json-body.guard.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { ACCEPTED_TOKEN_DIGESTS, DEV_TOKEN, type DevToken } from './accepted-tokens.js';
import { sha256 } from '../config/shared/api-tokens.js';
import { BearerGuard } from './bearer.guard.js';
import { BearerStrategy } from './bearer.strategy.js';
import { loadOrCreateDevToken } from './dev-token.js';

// The API's global guards, in the order they run (the body is read only once the token has
// passed); one list, so a route that runs them itself (API_GUARDS) runs the same ones.
const GLOBAL_GUARDS = [BearerGuard, JsonBodyGuard];

@Module({
  providers: [
    {
      provide: DEV_TOKEN,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): DevToken =>
        config.apiTokenDigests.length > 0 || config.production
          ? { token: undefined, file: undefined }
          : loadOrCreateDevToken(config.dataDir),
    },
    {
      provide: ACCEPTED_TOKEN_DIGESTS,
      inject: [APP_CONFIG, DEV_TOKEN],
      useFactory: (config: AppConfig, dev: DevToken): Buffer[] =>
        dev.token ? [sha256(dev.token)] : config.apiTokenDigests,
    },
    BearerStrategy,
    makeCounterProvider({
      name: 'auth_failures_total',
      help: 'API requests refused for a missing or invalid bearer token.',
    }),
    ...GLOBAL_GUARDS,
    ...GLOBAL_GUARDS.map((guard) => ({ provide: APP_GUARD, useExisting: guard })),
    {
      provide: API_GUARDS,
      inject: GLOBAL_GUARDS,
      useFactory: (...guards: CanActivate[]) => guards,
    },
  ],
  exports: [DEV_TOKEN, API_GUARDS],
})
export class AuthModule {}
