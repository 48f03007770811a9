import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  Optional,
} from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Logger } from 'pino';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { LOGGER } from '../common/logging/logger.token.js';
import { RateLimitedLog } from '../common/logging/rate-limited-log.js';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { WebhookReceiver } from '../config/webhook-receivers.js';
import {
  type ClaimedNotice,
  type CommittedNotice,
  WebhookOutboxRepository,
} from './webhook-outbox.repository.js';
import { WebhookSender } from './webhook-sender.js';

/** Per attempt, as the issue and Svix say. */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/**
 * PostgreSQL: a replica's lease on a notice, from its INSERT (or claim) on, in the database's
 * clock (replicas' clocks do not matter). Renewed every LEASE_MS / 10 (a second) for every
 * notice the replica holds (in memory, in flight, or delivered and not yet marked), so a live
 * replica keeps it however long an attempt takes, even through a stall (GC, a busy loop, a slow
 * UPDATE) of up to about nine seconds; a replica killed holding it has it taken over by another
 * (or by the next start) within this time and a poll. A replica stalled longer than the lease
 * may see its notice sent twice (at least once; receivers dedupe by webhook-id).
 */
export const LEASE_MS = 10_000;
/**
 * Notices one receiver's lane sends at once, all of them in flight together: one wave of
 * attempts per batch, so a batch ends within one attempt's timeout.
 */
const LANE_CONCURRENCY = 16;
const LANE_BATCH = LANE_CONCURRENCY;
/**
 * Notices one read of the outbox takes at most (within the inbox's room): a backlog (a burst
 * beyond the inbox, a previous run's) is read a page at a time, not a batch per read.
 */
const CLAIM_BATCH = 256;
/** How often a lane looks for due retries and for rows another replica wrote. */
const POLL_MS = 1_000;
/**
 * Notices a lane holds in memory (handed at commit, waiting to be sent). Beyond it, new ones
 * stay in the table only and the lane claims them from there: a receiver that lags does not
 * grow memory without bound. On PostgreSQL they keep the lease their INSERT wrote, unrenewed:
 * this replica's claims take them as its own while it lives, another's once the lease runs out
 * (no UPDATE per commit to give them back).
 */
const INBOX_LIMIT = 1_024;
/**
 * Delivered marks are written at most this often (or once MARK_BATCH accumulate, and at
 * shutdown), one UPDATE for all of them, rather than one per batch: at the rate plants are
 * created a write per batch cost nearly as much as the plants' own commits. A crash loses at
 * most this long of marks, and those notices are sent again after the restart (at least once;
 * receivers dedupe by webhook-id).
 */
export const MARK_EVERY_MS = 1_000;
const MARK_BATCH = 1_000;
/** Leases renewed per statement. */
const RENEW_BATCH = 1_000;
/**
 * A lane sends a notice only while this much of its lease is left by the local estimate
 * (a tenth of the lease: a second); one with less waits for the next renewal, or is dropped
 * if the renewal finds another replica took it.
 */
const SEND_MARGIN_SHARE = 0.1;
/**
 * The periodic tasks' warnings while the database is unreachable (lease renewals, outbox
 * reads, delivered marks): not one line a second each.
 */
const DATABASE_WARNING_RATE = { ratePerSecond: 1 / 60, burst: 2 };
/** How often the backlog metrics and /health details are refreshed. */
const BACKLOG_REFRESH_MS = 5_000;
/** Finished notices (delivered, failed, stopped) are kept this long, then deleted. */
export const RETENTION_MS = 7 * 24 * 3600_000;
const PRUNE_EVERY_MS = 10 * 60_000;
/** A Retry-After longer than this is cut to it. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/**
 * The dispatcher's intervals and limits, for tests only (a provider of
 * WEBHOOK_DISPATCHER_TIMING); the service uses the defaults above.
 */
export interface WebhookDispatcherTiming {
  leaseMs: number;
  markEveryMs: number;
  pollMs: number;
  inboxLimit: number;
  /** The sending thread's file (tests run the sources, which hold no built worker). */
  senderUrl?: URL;
}
export const WEBHOOK_DISPATCHER_TIMING = Symbol('WEBHOOK_DISPATCHER_TIMING');
const DEFAULT_TIMING: WebhookDispatcherTiming = {
  leaseMs: LEASE_MS,
  markEveryMs: MARK_EVERY_MS,
  pollMs: POLL_MS,
  inboxLimit: INBOX_LIMIT,
};

/** One receiver's delivery state in this process. */
interface Lane {
  receiver: WebhookReceiver;
  /** Committed notices handed in memory, oldest first. */
  inbox: ClaimedNotice[];
  /** Notices wait in the table that the inbox does not hold: claim before the next poll. */
  claimNeeded: boolean;
  /**
   * The last id the lane's previous page reached when it was full: the next page goes on after
   * it. The table's front holds notices this process already has (in its inbox, in flight, or
   * delivered and not yet marked: SQLite has no lease to skip them by), and reading it again
   * found nothing new, so a backlog beyond the inbox went out a batch per poll (16 a second).
   * Each poll reads from the front again, for due retries and rows committed out of id order.
   */
  claimAfter: bigint | undefined;
  /**
   * PostgreSQL: the lowest id of the rows leased to this process that it does not hold (its
   * INSERT leased them, and the inbox had no room; or the lane dropped them, stopped by a 410).
   * A poll leaves this process's leases out (the rows it holds), so the next paging read starts
   * before this id and takes them, rather than after their lease runs out.
   */
  ownFrom: bigint | undefined;
}

type Outcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'gone' }
  | { kind: 'retry'; error: string; retryAfterMs?: number }
  | { kind: 'lost' };

/**
 * Delivers the plant webhook's outbox: one lane per receiver, so a slow or dead receiver only
 * ever delays its own notices, never another receiver's and never POST /plants (which only
 * writes the outbox row). Each lane claims due notices with a lease, POSTs each signed per
 * Standard Webhooks, and records the outcome: 2xx delivered; 410 stops the receiver; anything
 * else (timeout, connection error, 429, 5xx, other statuses) is retried on the schedule,
 * honouring Retry-After, until the schedule runs out and the notice is kept as `failed`.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly owner = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly abort = new AbortController();
  private readonly lanes: Promise<void>[] = [];
  private readonly laneOf = new Map<string, Lane>();
  /**
   * Notices this process holds (handed in memory, in flight, or sent and not yet marked), with
   * when their lease runs out (PostgreSQL; Infinity on SQLite): never taken twice (a claim may
   * read a row that was also handed in memory, or one whose mark is not written), and their
   * leases renewed while held.
   */
  private readonly held = new Map<bigint, number>();
  private readonly timing: WebhookDispatcherTiming;
  /** Delivered, their mark not yet written (MARK_EVERY_MS). */
  private marks: bigint[] = [];
  private wakeMarker: (() => void) | undefined;
  private readonly wakers = new Set<() => void>();
  private readonly sender: WebhookSender;
  private unsubscribe: (() => void) | undefined;
  private lastBacklog: { pending: number; oldestAgeSeconds: number } | undefined;
  private readonly renewLog: RateLimitedLog;
  private readonly markLog: RateLimitedLog;

  constructor(
    private readonly outbox: WebhookOutboxRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @InjectMetric('webhook_deliveries_total') private readonly finished: Counter,
    @InjectMetric('webhook_delivery_attempts_total') private readonly attempts: Counter,
    @InjectMetric('webhook_delivery_duration_seconds') private readonly duration: Histogram,
    @InjectMetric('webhook_pending_notices') private readonly pending: Gauge,
    @InjectMetric('webhook_oldest_pending_age_seconds') private readonly oldestAge: Gauge,
    @Optional() @Inject(WEBHOOK_DISPATCHER_TIMING) timing?: Partial<WebhookDispatcherTiming>,
  ) {
    this.timing = { ...DEFAULT_TIMING, ...timing };
    this.renewLog = new RateLimitedLog(logger, DATABASE_WARNING_RATE);
    this.markLog = new RateLimitedLog(logger, DATABASE_WARNING_RATE);
    this.sender = new WebhookSender(
      config.webhooks.receivers,
      LANE_CONCURRENCY,
      ATTEMPT_TIMEOUT_MS,
      logger,
      this.timing.senderUrl,
    );
  }

  /** For /health details: never fails readiness. */
  status(): {
    receivers: string[];
    stopped: string[];
    pending?: number;
    oldestPendingAgeSeconds?: number;
  } {
    return {
      receivers: this.config.webhooks.receivers.map((r) => r.host),
      stopped: this.config.webhooks.receivers
        .filter((r) => this.outbox.isStopped(r.id))
        .map((r) => r.host),
      ...(this.lastBacklog && {
        pending: this.lastBacklog.pending,
        oldestPendingAgeSeconds: this.lastBacklog.oldestAgeSeconds,
      }),
    };
  }

  async onApplicationBootstrap(): Promise<void> {
    const receivers = this.config.webhooks.receivers;
    try {
      // Before any plant is taken: no notice is written for a receiver stopped by a 410.
      await this.outbox.forgetUnconfigured(receivers.map((r) => r.id));
      if (receivers.length > 0) await this.outbox.loadStopped();
    } catch (error) {
      // The claim checks the table itself, so nothing reaches a stopped receiver meanwhile.
      this.logger.warn({ reason: reasonOf(error) }, 'plant webhook: cannot read receivers state');
    }
    if (receivers.length === 0) return;
    await this.outbox.releaseLeasesIfSingleProcess();
    for (const receiver of receivers) {
      this.laneOf.set(receiver.id, {
        receiver,
        inbox: [],
        claimNeeded: true,
        claimAfter: undefined,
        ownFrom: undefined,
      });
    }
    this.unsubscribe = this.outbox.onCommitted({
      owner: this.owner,
      leaseMs: this.timing.leaseMs,
      take: (notices) => this.take(notices),
    });
    this.sender.start();
    for (const lane of this.laneOf.values()) this.lanes.push(this.runLane(lane));
    this.lanes.push(this.runMarker());
    if (this.outbox.leased) {
      this.lanes.push(this.renewEvery(this.timing.leaseMs / 10));
    }
    this.lanes.push(this.every(BACKLOG_REFRESH_MS, () => this.refreshBacklog()));
    // Another replica's 410, or an operator re-enabling a receiver, is seen within this time.
    this.lanes.push(this.every(BACKLOG_REFRESH_MS, () => this.refreshStopped()));
    this.lanes.push(this.every(PRUNE_EVERY_MS, () => this.prune()));
    this.logger.info(
      { receivers: receivers.map((r) => r.host) },
      'plant webhook dispatcher started',
    );
  }

  /** In-flight attempts are aborted and their notices released, to go out later. */
  async beforeApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    this.abort.abort();
    this.sender.abort();
    this.wakeAll();
    await Promise.all(this.lanes);
    await this.sender.close();
    if (this.lanes.length === 0) return;
    // The marks of notices already delivered, so the next start does not send them again.
    await this.writeMarks().catch((error: unknown) => {
      this.logger.warn({ reason: reasonOf(error) }, 'plant webhook: cannot record outcomes');
    });
    // Before the database closes (onApplicationShutdown): another replica, or the next start,
    // takes the aborted notices at once rather than after the lease.
    await this.outbox.releaseLeasesOf(this.owner).catch((error: unknown) => {
      this.logger.warn({ reason: reasonOf(error) }, 'plant webhook: cannot release leases');
    });
  }

  /**
   * Notices just committed: into their lanes' inboxes, up to the inbox limit each. The others
   * stay in the table, their lease (PostgreSQL) left to run out, and a claim takes them.
   */
  private take(notices: CommittedNotice[]): void {
    const leased = this.outbox.leased;
    for (const notice of notices) {
      const lane = this.laneOf.get(notice.receiver);
      if (!lane || this.held.has(notice.id)) continue;
      if (lane.inbox.length >= this.timing.inboxLimit || this.abort.signal.aborted) {
        this.leftInTable(lane, notice.id);
        continue;
      }
      this.held.set(notice.id, leased ? notice.createdAt + this.timing.leaseMs : Infinity);
      lane.inbox.push(notice);
    }
    this.wakeAll();
  }

  /** A notice leased to this process that it does not hold: the lane reads it from the table. */
  private leftInTable(lane: Lane, id: bigint): void {
    lane.claimNeeded = true;
    if (this.outbox.leased && (lane.ownFrom === undefined || id < lane.ownFrom)) lane.ownFrom = id;
  }

  /**
   * PostgreSQL: renews the leases of every notice held, every `ms`. A notice whose row is no
   * longer this process's (another replica took it over after the lease ran out, while this one
   * could not reach the database or was stalled) leaves its inbox unsent. Lanes waiting for a
   * renewal (`sendable`) are woken.
   */
  private async renewEvery(ms: number): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        await this.renewLeases();
      } catch (error) {
        // Once a second while the database is down: rate-limited, the suppressed lines counted.
        this.renewLog.warn({ reason: reasonOf(error) }, 'plant webhook: cannot renew leases');
      }
      await this.sleepUnlessWoken(ms);
    }
  }

  private async renewLeases(): Promise<void> {
    const held = [...this.held.keys()];
    for (let start = 0; start < held.length; start += RENEW_BATCH) {
      const ids = held.slice(start, start + RENEW_BATCH);
      // The local estimate of the lease's end: the database's clock starts it no earlier.
      const until = Date.now() + this.timing.leaseMs;
      const kept = await this.outbox.renewLeases(ids, this.owner, this.timing.leaseMs);
      const lost = new Set<bigint>();
      for (const id of ids) {
        if (!this.held.has(id)) continue; // marked or recorded meanwhile
        if (kept.has(id)) this.held.set(id, until);
        else lost.add(id);
      }
      if (lost.size === 0) continue;
      for (const lane of this.laneOf.values()) {
        lane.inbox = lane.inbox.filter((notice) => {
          if (!lost.has(notice.id)) return true;
          this.held.delete(notice.id);
          return false;
        });
      }
    }
    if ([...this.laneOf.values()].some((lane) => lane.inbox.length > 0)) this.wakeAll();
  }

  /**
   * Takes up to `count` notices from the inbox's front whose lease has at least the send margin
   * left by the local estimate (always on SQLite); the others stay, for after the next renewal.
   */
  private sendable(lane: Lane, count: number): ClaimedNotice[] {
    if (count <= 0) return [];
    const latest = Date.now() + this.timing.leaseMs * SEND_MARGIN_SHARE;
    const ok = (notice: ClaimedNotice) => (this.held.get(notice.id) ?? -Infinity) >= latest;
    const { inbox } = lane;
    let end = 0;
    while (end < inbox.length && end < count && ok(inbox[end]!)) end++;
    // The usual case, leases renewed in time: the front of the inbox, as it is.
    if (end === count || end === inbox.length) return inbox.splice(0, end);
    const taken: ClaimedNotice[] = [];
    lane.inbox = inbox.filter((notice) => {
      if (taken.length >= count || !ok(notice)) return true;
      taken.push(notice);
      return false;
    });
    return taken;
  }

  /** Writes the delivered marks every markEveryMs, or sooner once MARK_BATCH accumulate. */
  private async runMarker(): Promise<void> {
    while (!this.abort.signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.abort.signal.removeEventListener('abort', done);
          this.wakeMarker = undefined;
          resolve();
        };
        const timer = setTimeout(done, this.timing.markEveryMs);
        this.wakeMarker = done;
        this.abort.signal.addEventListener('abort', done);
      });
      try {
        await this.writeMarks();
      } catch (error) {
        this.markLog.warn({ reason: reasonOf(error) }, 'plant webhook: cannot record outcomes');
      }
    }
  }

  /** One UPDATE per chunk; a chunk that fails is kept for the next try. */
  private async writeMarks(): Promise<void> {
    while (this.marks.length > 0) {
      const chunk = this.marks.slice(0, MARK_BATCH);
      await this.outbox.deliveredAll(chunk);
      this.marks = this.marks.slice(chunk.length);
      for (const id of chunk) this.held.delete(id);
    }
  }

  private wakeAll(): void {
    for (const wake of [...this.wakers]) wake();
  }

  private sleep(ms: number): Promise<void> {
    // A stop that came while the caller awaited something else has already woken everyone.
    if (this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  private async every(ms: number, task: () => Promise<void>): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        await task();
      } catch (error) {
        this.logger.warn({ reason: reasonOf(error) }, 'plant webhook: outbox maintenance failed');
      }
      await this.sleepUnlessWoken(ms);
    }
  }

  /**
   * Like sleep, but only shutdown wakes it, not every commit; at once when the stop came
   * before it (while the caller's task ran): a listener added after the abort never fires.
   */
  private sleepUnlessWoken(ms: number): Promise<void> {
    return delay(ms, undefined, { signal: this.abort.signal }).catch(() => undefined);
  }

  private async refreshBacklog(): Promise<void> {
    const { pending, oldestCreatedAt } = await this.outbox.backlog();
    const oldestAgeSeconds =
      oldestCreatedAt === undefined ? 0 : Math.max(0, (Date.now() - oldestCreatedAt) / 1000);
    this.pending.set(pending);
    this.oldestAge.set(oldestAgeSeconds);
    this.lastBacklog = { pending, oldestAgeSeconds: Math.round(oldestAgeSeconds) };
  }

  private async refreshStopped(): Promise<void> {
    const before = this.config.webhooks.receivers.filter((r) => this.outbox.isStopped(r.id));
    await this.outbox.loadStopped();
    for (const receiver of before) {
      if (!this.outbox.isStopped(receiver.id)) {
        this.logger.info({ receiver: receiver.host }, 'plant webhook receiver re-enabled');
      }
    }
  }

  private async prune(): Promise<void> {
    const configured = this.config.webhooks.receivers.map((r) => r.id);
    let deleted = 0;
    for (let batch = 1000; batch === 1000 && !this.abort.signal.aborted;) {
      batch = await this.outbox.prune(Date.now() - RETENTION_MS, configured);
      deleted += batch;
    }
    if (deleted > 0) this.logger.info({ deleted }, 'plant webhook: old notices pruned');
  }

  private async runLane(lane: Lane): Promise<void> {
    const { receiver } = lane;
    const log = this.logger.child({ receiver: receiver.host });
    const readLog = new RateLimitedLog(log, DATABASE_WARNING_RATE);
    // The lane's metric series, looked up once rather than per notice.
    const durations = this.duration.labels({ receiver: receiver.host });
    const attempts = {
      delivered: this.attempts.labels({ receiver: receiver.host, result: '2xx' }),
      gone: this.attempts.labels({ receiver: receiver.host, result: '410' }),
      retry: this.attempts.labels({ receiver: receiver.host, result: 'retry' }),
    };
    let lastClaim = -Infinity;
    while (!this.abort.signal.aborted) {
      if (this.outbox.isStopped(receiver.id)) {
        // Stopped by a 410 (here, on another replica, or before a restart): idle until an
        // operator re-enables it. The table holds its notices as `stopped`.
        for (const notice of lane.inbox.splice(0)) {
          this.held.delete(notice.id);
          this.leftInTable(lane, notice.id);
        }
        lane.claimNeeded = true; // SQLite too: the table holds the dropped notices
        await this.sleep(this.timing.pollMs);
        continue;
      }
      // The table is read for what the inbox does not hold: due retries, notices of a previous
      // run or another replica, and those beyond the inbox limit; not once per commit. What it
      // finds joins the inbox, which the lane sends from.
      const room = this.timing.inboxLimit - lane.inbox.length;
      const polling = Date.now() - lastClaim >= this.timing.pollMs;
      // A backlog is read on from the last read, a page at a time once the inbox has room for
      // one (not a read per batch sent); a poll reads from the oldest.
      const paging =
        lane.claimNeeded && room >= Math.min(CLAIM_BATCH, Math.ceil(this.timing.inboxLimit / 2));
      let readOn = false;
      if ((polling || paging) && room > 0) {
        // A page goes on from the last page, or starts before the rows leased to this process
        // that it does not hold, whichever comes first; a poll reads from the oldest.
        const ownFrom = polling ? undefined : lane.ownFrom;
        const cursor = polling ? undefined : lane.claimAfter;
        const after =
          ownFrom !== undefined && (cursor === undefined || ownFrom <= cursor)
            ? ownFrom - 1n
            : cursor;
        if (!polling) lane.ownFrom = undefined; // this page starts before them; more come later
        const limit = Math.min(CLAIM_BATCH, room);
        if (polling) lastClaim = Date.now();
        try {
          const leaseMs = this.timing.leaseMs;
          const now = Date.now();
          const until = this.outbox.leased ? now + leaseMs : Infinity;
          const claimed = await this.outbox.claim(
            receiver.id,
            limit,
            leaseMs,
            this.owner,
            now,
            // A poll: due retries, rows no one holds, other replicas' expired leases; not the
            // rows this process holds (their leases are renewed, not taken again). A page
            // takes this process's own too: those the inbox had no room for.
            { afterId: after, ownLeases: !polling },
          );
          const fresh = claimed.filter((notice) => !this.held.has(notice.id));
          for (const notice of fresh) this.held.set(notice.id, until);
          const full = claimed.length === limit;
          if (!polling) {
            // A full page: more may follow it, read next time from where this one ended. The
            // cursor is the pages' alone: a poll skips this process's rows, so it cannot say
            // that everything before its last row was read.
            lane.claimAfter = full ? claimed.at(-1)!.id : undefined;
          } else if (full && lane.claimAfter === undefined) {
            // Unless no page is under way: then the rows it skipped are the ones this process
            // holds, and those its inbox had no room for, which the page reaches by ownFrom.
            // The page goes on after the poll's rows rather than leasing them again (a dead
            // replica's backlog, due retries after an outage).
            lane.claimAfter = claimed.at(-1)!.id;
          }
          lane.claimNeeded = full || lane.claimAfter !== undefined || lane.ownFrom !== undefined;
          readOn = lane.claimNeeded;
          // A poll's finds (due retries, a previous run's) go first; a backlog's page is newer
          // than what the inbox holds.
          if (polling) lane.inbox.unshift(...fresh);
          else lane.inbox.push(...fresh);
        } catch (error) {
          // The rows this page was to start before are still to be read.
          if (ownFrom !== undefined) this.leftInTable(lane, ownFrom);
          readLog.warn({ reason: reasonOf(error) }, 'plant webhook: cannot read the outbox');
        }
      }
      // Their leases (PostgreSQL) are renewed while they wait, however long that is.
      // One whose lease is nearly out (the renewal is late: a stall, the database down) waits.
      const notices = this.sendable(lane, LANE_BATCH);
      if (notices.length === 0) {
        // A full page of notices already held (SQLite: the table's front, not yet marked): the
        // next page at once, not after a poll.
        if (readOn) continue;
        await this.sleep(this.timing.pollMs);
        continue;
      }
      const results = await this.sender.send(
        receiver.id,
        notices.map(({ eventId, payload }) => ({ eventId, payload })),
      );
      const outcomes = results.map((result): Outcome => {
        if (result.kind === 'lost') return result;
        durations.observe(result.seconds);
        attempts[result.kind].inc();
        if (result.kind !== 'retry') return result;
        return {
          kind: 'retry',
          error: result.error,
          retryAfterMs: retryAfterMs(result.retryAfter ?? null),
        };
      });
      const delivered = notices.filter((_, i) => outcomes[i]!.kind === 'delivered');
      if (delivered.length > 0) {
        // Held until the mark is written, so no claim sends them again meanwhile. Even when
        // shutting down: the stop writes the marks it holds, so these are not sent twice.
        for (const notice of delivered) this.marks.push(notice.id);
        this.finished.inc({ receiver: receiver.host, outcome: 'delivered' }, delivered.length);
        if (this.marks.length >= MARK_BATCH) this.wakeMarker?.();
      }
      // Shutting down: the others are released (no retry is charged) and go out after the
      // restart, or from another replica.
      if (this.abort.signal.aborted) return;
      const lost: ClaimedNotice[] = [];
      for (const [i, notice] of notices.entries()) {
        const outcome = outcomes[i]!;
        if (outcome.kind === 'delivered') continue;
        if (outcome.kind === 'lost') {
          // Never answered (the sending thread stopped): no retry is charged; still held (its
          // lease renewed), it goes back to the front of the inbox for the next thread.
          lost.push(notice);
          continue;
        }
        try {
          await this.record(receiver, notice, outcome, log);
        } catch (error) {
          log.warn({ reason: reasonOf(error) }, 'plant webhook: cannot record outcomes');
          this.leftInTable(lane, notice.id); // still leased to this process, and due
        }
        this.held.delete(notice.id);
      }
      if (outcomes.some((o) => o.kind === 'gone')) {
        log.warn('plant webhook receiver answered 410 Gone: no more notices are sent to it');
      }
      // A sending thread that keeps dying is restarted at most once a poll per lane.
      if (lost.length > 0) {
        lane.inbox.unshift(...lost);
        await this.sleepUnlessWoken(this.timing.pollMs);
      }
    }
  }

  private async record(
    receiver: WebhookReceiver,
    notice: ClaimedNotice,
    outcome: Exclude<Outcome, { kind: 'delivered' | 'lost' }>,
    log: Logger,
  ): Promise<void> {
    const attempts = notice.attempts + 1;
    if (outcome.kind === 'gone') {
      await this.outbox.stopReceiver(receiver);
      this.finished.inc({ receiver: receiver.host, outcome: 'stopped' });
      return;
    }
    const schedule = this.config.webhooks.retrySchedule;
    const delaySeconds = schedule[attempts - 1];
    if (delaySeconds === undefined) {
      await this.outbox.failed(notice.id, attempts, outcome.error, this.owner);
      this.finished.inc({ receiver: receiver.host, outcome: 'failed' });
      log.warn(
        { event: notice.eventId, attempts, reason: outcome.error },
        'plant webhook notice failed: retries exhausted',
      );
      return;
    }
    const delayMs = outcome.retryAfterMs ?? delaySeconds * 1000;
    await this.outbox.retryAt(notice.id, attempts, Date.now() + delayMs, outcome.error, this.owner);
    log.info(
      { event: notice.eventId, attempts, reason: outcome.error, retryInMs: delayMs },
      'plant webhook attempt failed; retrying',
    );
  }
}

/** Retry-After in seconds or as an HTTP date, cut to a day; undefined when absent or invalid. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const date = Date.parse(trimmed);
    if (Number.isNaN(date)) return undefined;
    ms = date - now;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** An error's message without the URL (which may carry credentials). */
function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== 'ABORT_ERR') return code;
  const cause = (error as { cause?: { code?: string } }).cause;
  if (cause?.code) return cause.code;
  return error instanceof Error ? error.name : 'error';
}
