import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseJsonOrUndefined } from '../json-rpc/json-rpc.js';

/** Where a replica's agent connections are, as the other replicas read it. */
export interface ReplicaEntry {
  servers: string[];
  /** Redis's epoch ms after which the entry is stale (its replica stopped refreshing it). */
  until: number;
}

// A 2025-11-25 session as replicas read it; a takeover prefers `pod`; `until` is on Redis's clock.
// An owner must be a replica's URL (requests are forwarded there): anything else is not trusted.
const sessionRecord = z.object({
  owner: z.url({ protocol: /^https?$/ }),
  client: z.string(),
  agent: z.string(),
  server: z.string().nullable(),
  pod: z.string().optional(),
  logging: z.boolean().optional(),
  until: z.number(),
});
export type SessionRecord = z.infer<typeof sessionRecord>;

/** A session's record with its exact text in Redis, which a move compares and swaps. */
export interface SessionEntry {
  record: SessionRecord;
  text: string;
}

/** An entry outlives three refreshes: one or two missed under load do not drop it. */
export const ENTRY_TTL_MS = 15_000;
// Four entry lifetimes stop a replica still listing it (mid-publish, frozen) from writing it back;
// not the idle time, as churn filled Redis. Frozen longer, it may: only that client can use the id.
export const TOMBSTONE_TTL_MS = 4 * ENTRY_TTL_MS;
const SECRET_KEY = 'relay:peer-secret';
/** Set with a new secret for an entry's lifetime: Redis started empty, records come back. */
const REFILLING_KEY = 'relay:refilling';
const REPLICAS_KEY = 'relay:replicas';
const agentKey = (agent: string) => `relay:agent:${agent}`;
const sessionKey = (id: string) => `relay:session:${id}`;

// Writes each session's record unless its owner is no longer ARGV[1] (taken over, or a
// tombstone); returns the 1-based indexes of those taken over.
const PUBLISH_SESSIONS = `
local moved = {}
for i, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  local ok, record = pcall(cjson.decode, current or '{}')
  if current and ok and type(record) == 'table' and record.owner ~= ARGV[1] then
    table.insert(moved, i)
  else
    redis.call('SET', key, ARGV[i + 2], 'PX', ARGV[2])
  end
end
return moved`;
/** Compare and swap: the record is replaced only if it is still the text the caller read. */
const SWAP_SESSION = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`;
// Sets the peer secret unless there is one and, when it had to (Redis came back empty), the
// refill mark in the same step: no reader may see the new secret without the mark.
const CLAIM_SECRET = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
end
return redis.call('GET', KEYS[1])`;
/** An ended session's record: owned by no replica, read as no session at all. */
const TOMBSTONE = JSON.stringify({ owner: '' });

// The relay's keys in Redis. A session's key outlives its owner by the idle time, so another
// replica can take it over; the peer secret is set by whichever replica comes first (SET NX).
export class ClusterStore {
  /** Redis's clock minus this process's, as last read: every `until` is on Redis's clock. */
  private clockOffsetMs = 0;

  constructor(
    private readonly redis: Redis,
    /** A session's record lives this long after its owner last refreshed it. */
    private readonly sessionTtlMs: number,
  ) {}

  /** Now on Redis's clock, which every replica shares whatever its own clock says. */
  now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  async syncClock(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    this.clockOffsetMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Date.now();
    return this.clockOffsetMs;
  }

  async peerSecret(): Promise<string> {
    const fresh = randomBytes(32).toString('base64url');
    const secret = await this.redis.eval(
      CLAIM_SECRET,
      2,
      SECRET_KEY,
      REFILLING_KEY,
      fresh,
      ENTRY_TTL_MS,
    );
    if (typeof secret !== 'string') throw new Error('the peer secret vanished from Redis');
    return secret;
  }

  /** One round trip; returns the ids of sessions another replica took over (to let go here). */
  async publish(
    replica: string,
    agents: Map<string, string[]>,
    sessions: Map<string, Omit<SessionRecord, 'owner' | 'until'>>,
  ): Promise<string[]> {
    const until = this.now() + ENTRY_TTL_MS;
    const batch = this.redis.multi().hset(REPLICAS_KEY, replica, until);
    for (const [agent, servers] of agents) {
      batch.hset(agentKey(agent), replica, JSON.stringify({ servers, until }));
      batch.pexpire(agentKey(agent), ENTRY_TTL_MS * 4);
    }
    const ids = [...sessions.keys()];
    const texts = [...sessions.values()].map((r) =>
      JSON.stringify({ ...r, owner: replica, until }),
    );
    if (ids.length > 0) {
      batch.eval(
        PUBLISH_SESSIONS,
        ids.length,
        ...ids.map(sessionKey),
        replica,
        this.sessionTtlMs,
        ...texts,
      );
    }
    const results = await batch.exec();
    const [error, last] = results?.at(-1) ?? [new Error('the publish batch was discarded')];
    if (error) throw error;
    const moved = ids.length > 0 ? (last as number[]) : [];
    return moved.map((index) => ids[index - 1] as string);
  }

  async replicaUrls(): Promise<string[]> {
    const fields = await this.redis.hgetall(REPLICAS_KEY);
    const now = this.now();
    const stale = Object.keys(fields).filter((url) => !(Number(fields[url]) > now));
    if (stale.length > 0) await this.redis.hdel(REPLICAS_KEY, ...stale);
    return Object.keys(fields).filter((url) => !stale.includes(url));
  }

  async withdraw(replica: string, agents: string[], leaving = false): Promise<void> {
    if (agents.length === 0 && !leaving) return;
    const batch = this.redis.multi();
    if (leaving) batch.hdel(REPLICAS_KEY, replica);
    for (const agent of agents) batch.hdel(agentKey(agent), replica);
    await batch.exec();
  }

  async replicas(agent: string): Promise<Map<string, ReplicaEntry>> {
    const fields = await this.redis.hgetall(agentKey(agent));
    const now = this.now();
    const live = new Map<string, ReplicaEntry>();
    for (const [replica, text] of Object.entries(fields)) {
      const entry = parseJsonOrUndefined(text) as ReplicaEntry | undefined;
      if (entry && entry.until > now && Array.isArray(entry.servers)) live.set(replica, entry);
    }
    return live;
  }

  /** 'refilling' when there is none while Redis refills; throws if malformed (the caller: 503). */
  async session(id: string): Promise<SessionEntry | 'refilling' | undefined> {
    const [text, secret, refilling] = await this.redis.mget(
      sessionKey(id),
      SECRET_KEY,
      REFILLING_KEY,
    );
    if (text === null || text === undefined) {
      return secret === null || refilling !== null ? 'refilling' : undefined;
    }
    // A tombstone (owner '') is an ended session: the same 404 as an unknown one.
    if (text === TOMBSTONE) return undefined;
    const parsed = sessionRecord.safeParse(parseJsonOrUndefined(text));
    if (!parsed.success) throw new Error('the record of a session in Redis is malformed');
    return { record: parsed.data, text };
  }

  async moveSession(id: string, seen: SessionEntry, owner: string): Promise<boolean> {
    const moved = { ...seen.record, owner, until: this.now() + ENTRY_TTL_MS };
    const args = [seen.text, JSON.stringify(moved), this.sessionTtlMs];
    return (await this.redis.eval(SWAP_SESSION, 1, sessionKey(id), ...args)) === 1;
  }

  /** A tombstone while `owner` owns it; a replica that froze owning it then lets it go. */
  async forgetSession(id: string, owner: string): Promise<void> {
    const seen = await this.session(id);
    if (typeof seen !== 'object' || seen.record.owner !== owner) return;
    await this.redis.eval(SWAP_SESSION, 1, sessionKey(id), seen.text, TOMBSTONE, TOMBSTONE_TTL_MS);
  }
}
