import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { getToken, makeCounterProvider } from '@willsoto/nestjs-prometheus';
import type { Counter } from 'prom-client';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { LOGGER } from '../common/logging/logger.token.js';
import { DatabasePingService } from './database-ping.service.js';
import type { Database } from './database.types.js';
import { KYSELY } from './database.tokens.js';
import { migrateToLatest } from './migrate.js';
import { openPostgres, waitForPostgres } from './postgres.connection.js';
import { type OpenedSqlite, openSqlite } from './sqlite.connection.js';
import { keyReceiverIds } from './receiver-ids.js';
import { postgresProbe, sqliteProbe } from './store-probe.js';

/** Requests refused a PostgreSQL connection: the pool full, or the server not answering. */
const POOL_REFUSALS = 'db_pool_acquire_failures_total';

/** What the store factory opened: the Kysely instance and, for SQLite, its files' identity. */
const OPENED_STORE = Symbol('OPENED_STORE');
type OpenedStore = Pick<OpenedSqlite, 'db'> & Partial<OpenedSqlite>;

/** Opens, waits for, checks and migrates the configured store, and closes it at shutdown. */
@Global()
@Module({
  providers: [
    {
      provide: OPENED_STORE,
      inject: [APP_CONFIG, LOGGER, getToken(POOL_REFUSALS)],
      useFactory: async (
        config: AppConfig,
        logger: Logger,
        refusals: Counter,
      ): Promise<OpenedStore> => {
        const { database } = config;
        let opened: OpenedStore;
        if (database.kind === 'sqlite') {
          opened = openSqlite(database.file, config.dataDir);
          // Start-up detail: the "listening" line names the store; debug shows the file.
          logger.debug({ store: 'sqlite', file: database.file }, 'embedded store opened');
        } else {
          const db = openPostgres({
            url: database.url.reveal(),
            logger,
            pool: database.pool,
            onAcquireFailure: (reason) => refusals.inc({ reason }),
          });
          try {
            await waitForPostgres(db, { ...database, logger });
          } catch (error) {
            await db.destroy();
            throw error;
          }
          logger.info({ store: 'postgres', target: database.target }, 'PostgreSQL connected');
          opened = { db };
        }
        await migrateToLatest(opened.db, logger);
        await keyReceiverIds(opened.db, config.webhooks.receivers);
        return opened;
      },
    },
    { provide: KYSELY, inject: [OPENED_STORE], useFactory: (store: OpenedStore) => store.db },
    {
      provide: DatabasePingService,
      inject: [OPENED_STORE, APP_CONFIG, LOGGER],
      useFactory: (store: OpenedStore, config: AppConfig, logger: Logger) => {
        const probe = config.database.kind === 'sqlite' ? sqliteProbe : postgresProbe;
        return new DatabasePingService(store.db, probe, store.identity, logger);
      },
    },
    makeCounterProvider({
      name: POOL_REFUSALS,
      help: 'PostgreSQL connections not obtained within 3 s, by reason (pool_full, connect_failed).',
      labelNames: ['reason'],
    }),
  ],
  exports: [KYSELY, DatabasePingService],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(KYSELY) private readonly db: Kysely<Database>) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.destroy();
  }
}
