import { createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Counter, Gauge } from 'prom-client';
import { CoalescedTask } from '../../common/async/coalesced-task.js';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import type { RelayTarget } from '../mcp/sessions/relay-target.js';
import { type RelaySession, SessionStore } from '../mcp/sessions/session-store.service.js';
import {
  ClusterStore,
  ENTRY_TTL_MS,
  type ReplicaEntry,
  type SessionRecord,
} from './cluster-store.js';
import { PEER_AGENTS, PEER_CLIENT, PEER_SIGNATURE } from './peer-headers.js';
import { isPeerSignature, type PeerSigned, signPeerRequest } from './peer-signature.js';
import { connectRedis, failureCode, reasonOf } from './redis-client.js';
import { pickOne, SessionMover, type SessionPlacement } from './session-mover.js';

/** Where a client's request is served; `unavailable`: nowhere while Redis is down. */
type Placement = SessionPlacement | { kind: 'unavailable' };

/** Refreshed three times per entry lifetime, so a replica that stops is out within seconds. */
const REFRESH_MS = ENTRY_TTL_MS / 3;
/**
 * Refreshes start this far apart: in a reconnect storm, one per connection (each writing every
 * agent held here) took most of a replica's CPU.
 */
const REFRESH_GAP_MS = 250;
/** A clock this far off Redis's is logged (NTP keeps clocks within milliseconds). */
const CLOCK_SKEW_WARN_MS = 2_000;

// This replica's part in a relay of several: publishes its agents and sessions in Redis and says
// where a request is served. Without RELAY_REDIS_URL it does nothing: everything is served here.
@Injectable()
export class RelayCluster implements OnModuleDestroy {
  private redis: Redis | undefined;
  private store: ClusterStore | undefined;
  private mover: SessionMover | undefined;
  private secret: KeyObject | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly refresher: CoalescedTask;
  /** The next refresh writes the session records too. */
  private sessionsDue = true;
  private published = new Set<string>();
  /** The replicas' addresses, whose connections the per-address cap does not count. */
  private peerAddresses = new Set<string>();
  /** Peers that refused a connection or froze lately, by the time they may be tried again. */
  private readonly suspects = new Map<string, number>();
  private readonly log: RateLimitedLog;
  /** How other replicas reach this one; known once RELAY_PORT is bound. */
  replicaUrl = '';
  /** Redis answered at least once since the start (readiness waits for it). */
  reachedOnce = false;
  /** Why the last write to Redis failed (Redis full...), until one succeeds: /health shows it. */
  publishError: string | undefined;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: AgentRegistry,
    private readonly sessions: SessionStore,
    @InjectMetric('relay_redis_up') private readonly up: Gauge,
    @InjectMetric('relay_redis_publish_failures_total')
    private readonly publishFailures: Counter<'reason'>,
  ) {
    this.log = new RateLimitedLog(logger);
    this.refresher = new CoalescedTask(
      () => this.refresh(),
      (error) => this.publishFailed(error),
      REFRESH_GAP_MS,
    );
    this.up.set(0);
    registry.on('inventory', () => this.refreshSoon('agents'));
    registry.on('disconnect', () => this.refreshSoon('agents'));
    sessions.onEnd((id) => this.forgetSession(id));
  }

  get enabled(): boolean {
    return this.config.cluster !== undefined;
  }

  get redisUp(): boolean {
    return this.redis?.status === 'ready';
  }

  /** Connects to Redis once the public port is bound (its number is this replica's address). */
  async start(boundPort: number): Promise<void> {
    const cluster = this.config.cluster;
    if (!cluster) return;
    const scheme = this.config.tls ? 'https' : 'http';
    this.replicaUrl = cluster.replicaUrl ?? `${scheme}://127.0.0.1:${boundPort}`;
    this.redis = await connectRedis(cluster, this.logger, () => this.refreshSoon());
    this.redis.on('close', () => this.up.set(0));
    this.store = new ClusterStore(this.redis, this.config.sessionIdleMs);
    this.mover = new SessionMover({
      store: this.store,
      replica: this.replicaUrl,
      registry: this.registry,
      sessions: this.sessions,
      waitMs: cluster.sessionMoveMs,
      maxWaitingPerClient: this.config.maxInFlightPerClient,
      suspected: (url) => this.suspected(url),
    });
    this.timer = setInterval(() => this.refreshSoon(), REFRESH_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    // A refresh still under way after the withdrawal would list this replica again.
    await this.refresher.stop();
    const agents = [...this.published];
    await this.store?.withdraw(this.replicaUrl, agents, true).catch(() => undefined);
    this.redis?.disconnect();
  }

  /** Where `target` is served; `signal`: its client hung up (a wait for a move stops). */
  async place(target: RelayTarget, signal: AbortSignal): Promise<Placement> {
    const { sessionId } = target;
    if (!this.store || !this.mover) return { kind: 'here' };
    // A 2026 retry goes where its call is held, whichever replicas serve its agent.
    const heldElsewhere =
      sessionId === undefined &&
      target.heldBy !== undefined &&
      target.heldBy !== tagOf(this.replicaUrl);
    const held = sessionId !== undefined ? this.sessions.holds(sessionId) : this.holds(target);
    if (held && !heldElsewhere) return { kind: 'here' };
    // No secret yet: Redis was never reached, so no peer can be found nor trusted.
    if (!this.secret) return { kind: 'unavailable' };
    try {
      if (sessionId !== undefined) return await this.mover.place({ ...target, sessionId }, signal);
      const url = await this.placeNew(this.store, target, heldElsewhere);
      return url === undefined ? { kind: 'here' } : { kind: 'peer', url };
    } catch {
      return { kind: 'unavailable' };
    }
  }

  /** No session: to the live replica its retry's tag names (none: here), else to one serving it. */
  private async placeNew(
    store: ClusterStore,
    { agent, server, heldBy }: RelayTarget,
    heldElsewhere: boolean,
  ): Promise<string | undefined> {
    const peers = await this.livePeers(store, agent);
    if (heldElsewhere) return peers.find(([url]) => tagOf(url) === heldBy)?.[0];
    return pickOne(
      peers.filter(([, e]) => server === undefined || e.servers.includes(server)),
    )?.[0];
  }

  /** A request a peer passed here: a session it just moved here is taken over first. */
  async placeForPeer(target: RelayTarget): Promise<{ kind: 'here' | 'waiting' | 'unavailable' }> {
    const { sessionId } = target;
    if (!this.mover || sessionId === undefined || this.sessions.holds(sessionId)) {
      return { kind: 'here' };
    }
    return this.mover.placeForPeer({ ...target, sessionId }).catch(() => ({
      kind: 'unavailable' as const,
    }));
  }

  async recordSession(id: string, record: HeldRecord): Promise<boolean> {
    if (!this.store) return true;
    const session = this.sessions.list().find((s) => s.id === id);
    const full = session ? recordOf(session) : record;
    return this.store.publish(this.replicaUrl, new Map(), new Map([[id, full]])).then(
      () => true,
      (error: unknown) => {
        this.publishFailed(error);
        return false;
      },
    );
  }

  // A peer that refused a connection or answered no ping: no new request goes to it, and its
  // sessions move, until its entries would have expired anyway (it stopped, or it froze).
  suspect(url: string): void {
    this.suspects.set(url, Date.now() + ENTRY_TTL_MS);
  }

  private suspected(url: string): boolean {
    return (this.suspects.get(url) ?? 0) >= Date.now();
  }

  /** A session ended for good: its record goes, unless another replica took it over. */
  forgetSession(id: string): void {
    void this.store?.forgetSession(id, this.replicaUrl).catch(() => undefined);
  }

  /** A connection from another replica (an IPv4 peer may show as `::ffff:10.0.0.7`). */
  isPeerAddress(address: string): boolean {
    return this.peerAddresses.has(address.replace(/^::ffff:/, ''));
  }

  /** Headers vouching for a request to a peer (no `who`: a ping); '' until Redis gives a secret. */
  peerCredentials(
    method: string,
    url: URL,
    who = { client: '', agents: '', session: '' },
  ): Record<string, string> {
    const signed = { method, path: url.pathname + url.search, ...who };
    const signature = this.secret ? signPeerRequest(this.secret, signed, this.store?.now()) : '';
    return { [PEER_SIGNATURE]: signature, [PEER_CLIENT]: who.client, [PEER_AGENTS]: who.agents };
  }

  /** A request from a peer: signed with the shared secret, for this very request, lately. */
  isPeerSigned(signature: string, signed: PeerSigned): boolean {
    const now = this.store?.now();
    return this.secret !== undefined && isPeerSignature(this.secret, signed, signature, now);
  }

  // For the aggregate endpoint: `agent`'s servers up on live peers but not here, each with one of
  // those peers (at random). Empty without Redis or while it is down.
  async serversElsewhere(agent: string): Promise<Map<string, string>> {
    if (!this.store || !this.secret) return new Map();
    const peers = await this.livePeers(this.store, agent).catch(() => []);
    const elsewhere = new Map<string, string[]>();
    for (const [url, { servers }] of peers) {
      for (const server of servers) {
        if (typeof server !== 'string' || this.holds({ agent, server })) continue;
        elsewhere.set(server, [...(elsewhere.get(server) ?? []), url]);
      }
    }
    return new Map([...elsewhere].map(([server, urls]) => [server, pickOne(urls) ?? '']));
  }

  /** Live, unsuspected peers with a connection of `agent`, and the servers up there. */
  private async livePeers(store: ClusterStore, agent: string): Promise<[string, ReplicaEntry][]> {
    const replicas = await store.replicas(agent);
    return [...replicas].filter(([url]) => url !== this.replicaUrl && !this.suspected(url));
  }

  private holds({ agent, server }: Pick<RelayTarget, 'agent' | 'server'>): boolean {
    return this.registry.serving(agent, server).length > 0;
  }

  /**
   * Rewrites this replica's entries soon: `agents` leaves the session records out, each written
   * when its session starts and renewed by the periodic refresh (10,000 cost the relay ~30 ms of
   * CPU and Redis as much: bench/relay-refresh.mjs).
   */
  refreshSoon(scope: 'all' | 'agents' = 'all'): void {
    if (!this.store) return;
    if (scope === 'all') this.sessionsDue = true;
    this.refresher.request();
  }

  /** Publishes what this replica holds: all every few seconds, its agents on their changes. */
  private async refresh(): Promise<void> {
    const store = this.store;
    if (!store || !this.redisUp) {
      this.up.set(0);
      return;
    }
    this.warnOfSkew(await store.syncClock());
    // A KeyObject made once a refresh: HMAC with a Buffer key builds one per request.
    this.secret = createSecretKey(Buffer.from(await store.peerSecret()));
    const agents = this.heldAgents();
    const gone = [...this.published].filter((agent) => !agents.has(agent));
    const withSessions = this.sessionsDue;
    this.sessionsDue = false;
    const sessions = withSessions ? this.sessionRecords() : new Map<string, HeldRecord>();
    const moved = await store.publish(this.replicaUrl, agents, sessions).catch((error: unknown) => {
      this.sessionsDue ||= withSessions;
      throw error;
    });
    // Taken over by another replica while this one could not refresh them (it was frozen).
    for (const id of moved) this.sessions.drop(id);
    await store.withdraw(this.replicaUrl, gone);
    this.peerAddresses = new Set((await store.replicaUrls()).map(addressOf));
    this.published = new Set(agents.keys());
    this.reachedOnce = true;
    this.publishError = undefined;
    this.up.set(1);
  }

  /** A write Redis refused (full, read-only...) or lost: shown in /health, counted, logged. */
  private publishFailed(error: unknown): void {
    if (!this.redisUp) return; // unreachable: /health and relay_redis_up say so already
    this.publishError = `cannot write to Redis: ${reasonOf(error as Error)}`;
    this.up.set(0);
    this.publishFailures.inc({ reason: failureCode(error) });
    this.log.warn({ reason: this.publishError }, 'cannot publish this replica to Redis; retrying');
  }

  /** Harmless (times are read on Redis's clock) but worth fixing: other services use this one. */
  private warnOfSkew(offsetMs: number): void {
    if (Math.abs(offsetMs) < CLOCK_SKEW_WARN_MS) return;
    const aheadOfRedisSeconds = -Math.round(offsetMs / 1000);
    this.log.warn(
      { aheadOfRedisSeconds },
      "this replica's clock is off Redis's; shared times use Redis's",
    );
  }

  private heldAgents(): Map<string, string[]> {
    const held = new Map<string, string[]>();
    for (const { name } of this.config.agents) {
      if (this.registry.serving(name).length > 0) held.set(name, this.registry.serversUp(name));
    }
    return held;
  }

  private sessionRecords(): Map<string, HeldRecord> {
    return new Map(this.sessions.list().map((session) => [session.id, recordOf(session)]));
  }
}

type HeldRecord = Omit<SessionRecord, 'owner' | 'until'>;

/** What another replica needs to take the session over, should this one go. */
function recordOf({ client, agent, pinned, wantsLogging }: RelaySession): HeldRecord {
  const pod = pinned?.connection.agentId;
  return {
    client,
    agent,
    server: pinned?.server ?? null,
    ...(pod !== undefined && { pod }),
    ...(wantsLogging && { logging: true }),
  };
}

// A replica's name in MRTR request states: a hash, as clients must not see its URL (internal).
// 48 bits: replicas of one relay never share one in practice.
export function tagOf(replicaUrl: string): string {
  return createHash('sha256').update(replicaUrl).digest('base64url').slice(0, 8);
}

function addressOf(url: string): string {
  return new URL(url).hostname.replace(/^\[|\]$/g, '');
}
