import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { LOGGER } from '../common/logging/logger.token.js';
import { DatabasePingService } from './database-ping.service.js';
import type { Database } from './database.types.js';
import { KYSELY } from './database.tokens.js';
import { migrateToLatest } from './migrate.js';
import { openPostgres, waitForPostgres } from './postgres.connection.js';
import { openSqlite } from './sqlite.connection.js';

/**
 * Opens the configured store (embedded SQLite by default, PostgreSQL with DATABASE_URL),
 * waits for it, migrates it, and closes it when the app shuts down.
 */
@Global()
@Module({
  providers: [
    {
      provide: KYSELY,
      inject: [APP_CONFIG, LOGGER],
      useFactory: async (config: AppConfig, logger: Logger): Promise<Kysely<Database>> => {
        const { database } = config;
        let db: Kysely<Database>;
        if (database.kind === 'sqlite') {
          db = openSqlite(database.file);
          logger.info({ store: 'sqlite', file: database.file }, 'embedded store opened');
        } else {
          db = openPostgres({ url: database.url.reveal(), logger });
          try {
            await waitForPostgres(db, { ...database, url: '', logger });
          } catch (error) {
            await db.destroy();
            throw error;
          }
          logger.info({ store: 'postgres', target: database.target }, 'PostgreSQL connected');
        }
        await migrateToLatest(db, logger);
        return db;
      },
    },
    DatabasePingService,
  ],
  exports: [KYSELY, DatabasePingService],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(KYSELY) private readonly db: Kysely<Database>) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.destroy();
  }
}
