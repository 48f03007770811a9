import {
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DatabasePingService } from '../../database/database-ping.service.js';
import { DATABASE_PING_TIMEOUT_MS } from '../../database/database.health.js';

const WATCH_INTERVAL_MS = 10_000;

/**
 * Keeps `db_up` current between health checks with one cheap ping every 10 s; the ping also
 * looks at the embedded store's files, so a deleted one shows even when no request comes.
 */
@Injectable()
export class DatabaseWatchService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ping: DatabasePingService) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(
      () => void this.ping.ping(DATABASE_PING_TIMEOUT_MS),
      WATCH_INTERVAL_MS,
    );
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
