import { setTimeout as delay } from 'node:timers/promises';
import type { AgentRegistry } from '../agents/agent-registry.service.js';
import { InFlightLimiter } from '../../common/async/in-flight-limiter.js';
import type { RelayTarget } from '../mcp/sessions/relay-target.js';
import type { SessionStore } from '../mcp/sessions/session-store.service.js';
import type { ClusterStore, SessionRecord } from './cluster-store.js';

/** Where a session's request is served; `waiting`: nowhere yet (its agent is reconnecting). */
export type SessionPlacement =
  { kind: 'here' } | { kind: 'peer'; url: string } | { kind: 'waiting' };

type SessionTarget = RelayTarget & { sessionId: string };

export interface SessionMoverDeps {
  store: ClusterStore;
  replica: string;
  registry: AgentRegistry;
  sessions: SessionStore;
  waitMs: number;
  maxWaitingPerClient: number;
  suspected: (url: string) => boolean;
}

export const pickOne = <T>(items: readonly T[]): T | undefined =>
  items[Math.floor(Math.random() * items.length)];

/** How often a waiting request looks again for a connection of the session's agent. */
const POLL_MS = 200;
const HERE = { kind: 'here' } as const;
const WAITING = { kind: 'waiting' } as const;

// Moves a session off a replica gone (killed, frozen, lost the agent). Agents keep no state per
// relay connection, so only the Redis record moves; one replica wins, by compare-and-set.
export class SessionMover {
  private readonly waiting: InFlightLimiter;

  constructor(private readonly deps: SessionMoverDeps) {
    this.waiting = new InFlightLimiter(deps.maxWaitingPerClient);
  }

  // Where a session's request is served, moving it if need be; with no home yet it polls Redis
  // until one, the deadline or a hang-up (at most the client's in-flight cap of requests wait so).
  async place(target: SessionTarget, signal: AbortSignal): Promise<SessionPlacement> {
    const deadline = Date.now() + this.deps.waitMs;
    let release: (() => void) | undefined;
    try {
      for (;;) {
        const step = await this.step(target);
        if (typeof step === 'object') return step;
        if (Date.now() >= deadline || signal.aborted) return WAITING;
        if (step === 'moved-by-another') continue;
        release ??= this.waiting.acquire(target.client);
        if (!release) return WAITING;
        const polled = await delay(POLL_MS, true, { signal }).catch(() => false);
        if (!polled) return WAITING;
      }
    } finally {
      release?.();
    }
  }

  private async step(
    target: SessionTarget,
  ): Promise<SessionPlacement | 'no-home-yet' | 'moved-by-another'> {
    const { store, replica } = this.deps;
    const entry = await store.session(target.sessionId);
    // While Redis refills, its owner has yet to write the record back: wait for it.
    if (entry === 'refilling') return 'no-home-yet';
    // Unknown, or not this client's, agent's or server's: the same 404 as with one replica.
    if (!entry || !belongsTo(entry.record, target)) return HERE;
    const { owner } = entry.record;
    if (owner !== replica && !this.gone(entry.record)) return { kind: 'peer', url: owner };
    const home = await this.newHome(entry.record);
    if (home === undefined) return 'no-home-yet';
    if (!(await store.moveSession(target.sessionId, entry, home))) return 'moved-by-another';
    if (home !== replica) return { kind: 'peer', url: home };
    return this.takeOver(target.sessionId, entry.record) ? HERE : WAITING;
  }

  /** A peer passed a request here: served when the record names this replica (just moved). */
  async placeForPeer(target: SessionTarget): Promise<{ kind: 'here' | 'waiting' }> {
    const entry = await this.deps.store.session(target.sessionId);
    if (entry === 'refilling') return WAITING;
    if (!entry || !belongsTo(entry.record, target)) return HERE;
    if (entry.record.owner !== this.deps.replica) return WAITING;
    return this.takeOver(target.sessionId, entry.record) ? HERE : WAITING;
  }

  private gone(record: SessionRecord): boolean {
    return record.until < this.deps.store.now() || this.deps.suspected(record.owner);
  }

  private async newHome(record: SessionRecord): Promise<string | undefined> {
    if (this.connectionFor(record)) return this.deps.replica;
    const replicas = await this.deps.store.replicas(record.agent);
    const homes = [...replicas]
      .filter(([url]) => url !== this.deps.replica && url !== record.owner)
      .filter(([url]) => !this.deps.suspected(url))
      .filter(([, entry]) => record.server === null || entry.servers.includes(record.server))
      .map(([url]) => url);
    return pickOne(homes);
  }

  private takeOver(id: string, record: SessionRecord): boolean {
    const { client, agent, server } = record;
    const connection = server === null ? undefined : this.connectionFor(record);
    if (server !== null && !connection) return false;
    const pinned = server !== null && connection ? { server, connection } : undefined;
    this.deps.sessions.adopt(id, { client, agent, wantsLogging: record.logging === true }, pinned);
    return true;
  }

  private connectionFor(record: SessionRecord) {
    const open = this.deps.registry.serving(record.agent, record.server);
    return open.find((c) => c.agentId === record.pod) ?? open[0];
  }
}

function belongsTo(record: SessionRecord, target: SessionTarget): boolean {
  return (
    record.client === target.client &&
    record.agent === target.agent &&
    record.server === (target.server ?? null)
  );
}
