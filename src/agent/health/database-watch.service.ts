import {
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DatabasePingService } from '../../database/database-ping.service.js';
import { DATABASE_PING_TIMEOUT_MS } from '../../database/database.health.js';

const WATCH_INTERVAL_MS = 10_000;

/** Keeps `db_up` current with a ping every 10 s; it also sees a deleted store file unasked. */
@Injectable()
export class DatabaseWatchService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ping: DatabasePingService) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(
      () => void this.ping.ping(DATABASE_PING_TIMEOUT_MS),
      WATCH_INTERVAL_MS,
    ).unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
