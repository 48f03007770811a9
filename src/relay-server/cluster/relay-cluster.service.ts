import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import { LOGGER } from '../../common/logging/logger.token.js';
import { RateLimitedLog } from '../../common/logging/rate-limited-log.js';
import { AgentRegistry } from '../agents/agent-registry.service.js';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { SessionStore } from '../mcp/session-store.service.js';
import { ClusterStore, ENTRY_TTL_MS, type SessionRecord } from './cluster-store.js';
import { connectRedis } from './redis-client.js';

/** Where a client's request is served: here, on another replica, or nowhere while Redis is down. */
export type Placement = { kind: 'here' } | { kind: 'peer'; url: string } | { kind: 'unavailable' };

export interface PlacementTarget {
  client: string;
  agent: string;
  server: string | undefined;
  sessionId: string | undefined;
}

/** Refreshed three times per entry lifetime, so a replica that stops is out within seconds. */
const REFRESH_MS = ENTRY_TTL_MS / 3;

/**
 * This replica's part in a relay of several (RELAY_REDIS_URL set): it publishes in Redis the
 * agents it holds connections of and the sessions it owns, and tells the MCP endpoints where a
 * request is served. Without RELAY_REDIS_URL it does nothing and everything is served here.
 */
@Injectable()
export class RelayCluster implements OnModuleDestroy {
  private redis: Redis | undefined;
  private store: ClusterStore | undefined;
  private secret: Buffer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private published = new Set<string>();
  /** Peers that refused or timed out lately, by the time they may be tried again. */
  private readonly suspects = new Map<string, number>();
  private readonly log: RateLimitedLog;
  /** How other replicas reach this one; known once RELAY_PORT is bound. */
  replicaUrl = '';
  /** Redis answered at least once since the start (readiness waits for it). */
  reachedOnce = false;

  constructor(
    @Inject(RELAY_CONFIG) private readonly config: RelayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: AgentRegistry,
    private readonly sessions: SessionStore,
    @InjectMetric('relay_redis_up') private readonly up: Gauge,
  ) {
    this.log = new RateLimitedLog(logger);
    this.up.set(0);
    const changed = () => this.refreshSoon();
    registry.onInventoryChange(changed);
    registry.onDisconnect(changed);
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
    this.store = new ClusterStore(this.redis);
    this.timer = setInterval(() => this.refreshSoon(), REFRESH_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    const agents = [...this.published];
    await this.store?.withdraw(this.replicaUrl, agents).catch(() => undefined);
    this.redis?.disconnect();
  }

  /** Where `target` is served (a request a peer forwarded is served here: the caller knows). */
  async place(target: PlacementTarget): Promise<Placement> {
    const { sessionId } = target;
    if (!this.store) return { kind: 'here' };
    if (sessionId !== undefined ? this.sessions.holds(sessionId) : this.holds(target)) {
      return { kind: 'here' };
    }
    // No secret yet: Redis was never reached, so no peer can be found nor trusted.
    if (!this.secret) return { kind: 'unavailable' };
    try {
      return sessionId !== undefined
        ? await this.placeSession(this.store, target, sessionId)
        : await this.placeNew(this.store, target);
    } catch {
      return { kind: 'unavailable' };
    }
  }

  /** Records a session this replica just opened, before its id reaches the client. */
  async recordSession(id: string, record: Omit<SessionRecord, 'owner'>): Promise<boolean> {
    if (!this.store) return true;
    const sessions = new Map([[id, { ...record, owner: this.replicaUrl }]]);
    return this.store.publish(this.replicaUrl, new Map(), sessions).then(
      () => true,
      () => false,
    );
  }

  /**
   * A peer that refused a connection or did not answer in time: no new request goes to it
   * until its entries would have expired anyway (it stopped, or it froze).
   */
  suspect(url: string): void {
    this.suspects.set(url, Date.now() + ENTRY_TTL_MS);
  }

  forgetSession(id: string): void {
    void this.store?.forgetSession(id).catch(() => undefined);
  }

  /** A forwarded request's secret, compared in constant time. */
  isPeerSecret(value: string): boolean {
    const given = Buffer.from(value);
    return this.secret !== undefined && given.length === this.secret.length
      ? timingSafeEqual(given, this.secret)
      : false;
  }

  get peerSecret(): string | undefined {
    return this.secret?.toString();
  }

  private async placeSession(
    store: ClusterStore,
    target: PlacementTarget,
    id: string,
  ): Promise<Placement> {
    const record = await store.session(id);
    // Unknown, or another client's: answered here, with the same 404 as with one replica.
    if (!record || record.client !== target.client || record.owner === this.replicaUrl) {
      return { kind: 'here' };
    }
    return { kind: 'peer', url: record.owner };
  }

  /** A request that opens no session yet: to a replica holding a connection that serves it. */
  private async placeNew(store: ClusterStore, target: PlacementTarget): Promise<Placement> {
    const replicas = await store.replicas(target.agent);
    const now = Date.now();
    const serving = [...replicas]
      .filter(([url, entry]) => url !== this.replicaUrl && servesTarget(entry.servers, target))
      .filter(([url]) => (this.suspects.get(url) ?? 0) < now)
      .map(([url]) => url);
    const url = serving[Math.floor(Math.random() * serving.length)];
    return url === undefined ? { kind: 'here' } : { kind: 'peer', url };
  }

  private holds({ agent, server }: PlacementTarget): boolean {
    return this.registry
      .of(agent)
      .some((c) => c.open && (server === undefined || c.serves(server)));
  }

  private refreshing = false;

  private refreshSoon(): void {
    if (!this.store || this.refreshing) return;
    this.refreshing = true;
    setImmediate(() => {
      this.refresh()
        .catch(() => this.log.warn({}, 'cannot publish this replica to Redis; retrying'))
        .finally(() => (this.refreshing = false));
    });
  }

  /** Publishes what this replica holds; re-run every few seconds and on every change. */
  private async refresh(): Promise<void> {
    const store = this.store;
    if (!store || !this.redisUp) {
      this.up.set(0);
      return;
    }
    this.secret = Buffer.from(await store.peerSecret());
    const agents = this.heldAgents();
    const gone = [...this.published].filter((agent) => !agents.has(agent));
    await store.publish(this.replicaUrl, agents, this.sessionRecords());
    await store.withdraw(this.replicaUrl, gone);
    this.published = new Set(agents.keys());
    this.reachedOnce = true;
    this.up.set(1);
  }

  private heldAgents(): Map<string, string[]> {
    const held = new Map<string, string[]>();
    for (const agent of this.config.agents) {
      const open = this.registry.of(agent.name).filter((c) => c.open);
      if (open.length === 0) continue;
      const up = open.flatMap((c) => c.servers.filter((s) => s.state === 'up').map((s) => s.name));
      held.set(agent.name, [...new Set(up)]);
    }
    return held;
  }

  private sessionRecords(): Map<string, SessionRecord> {
    const records = new Map<string, SessionRecord>();
    for (const session of this.sessions.list()) {
      records.set(session.id, {
        owner: this.replicaUrl,
        client: session.client,
        agent: session.agent,
        server: session.pinned?.server ?? null,
      });
    }
    return records;
  }
}

/** The aggregate endpoint takes any connection of the agent; a per-server one, that server up. */
function servesTarget(servers: string[], target: PlacementTarget): boolean {
  return target.server === undefined || servers.includes(target.server);
}
