import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Where a replica's agent connections are, as the other replicas read it. */
export interface ReplicaEntry {
  /** The MCP servers up on this replica's connections of the agent. */
  servers: string[];
  /** Epoch ms after which the entry is stale (its replica stopped refreshing it). */
  until: number;
}

/** A 2025-11-25 session, as the other replicas read it: who holds it and for whom. */
export interface SessionRecord {
  owner: string;
  client: string;
  agent: string;
  server: string | null;
}

/** An entry outlives three refreshes: one or two missed under load do not drop it. */
export const ENTRY_TTL_MS = 15_000;
const SECRET_KEY = 'relay:peer-secret';
const agentKey = (agent: string) => `relay:agent:${agent}`;
const sessionKey = (id: string) => `relay:session:${id}`;

/**
 * The relay's keys in Redis. Agents: one hash per agent, a field per replica holding a
 * connection of it. Sessions: one key each, with a TTL the owner refreshes. Peer secret: one
 * random value, set once by whichever replica comes first (SET NX).
 */
export class ClusterStore {
  constructor(private readonly redis: Redis) {}

  async peerSecret(): Promise<string> {
    await this.redis.set(SECRET_KEY, randomBytes(32).toString('base64url'), 'NX');
    const secret = await this.redis.get(SECRET_KEY);
    if (!secret) throw new Error('the peer secret vanished from Redis');
    return secret;
  }

  /** Writes this replica's agents (servers up; none: removed) and sessions, in one round trip. */
  async publish(
    replica: string,
    agents: Map<string, string[]>,
    sessions: Map<string, SessionRecord>,
  ): Promise<void> {
    const until = Date.now() + ENTRY_TTL_MS;
    const batch = this.redis.multi();
    for (const [agent, servers] of agents) {
      batch.hset(agentKey(agent), replica, JSON.stringify({ servers, until }));
      batch.pexpire(agentKey(agent), ENTRY_TTL_MS * 4);
    }
    for (const [id, record] of sessions) {
      batch.set(sessionKey(id), JSON.stringify(record), 'PX', ENTRY_TTL_MS);
    }
    await batch.exec();
  }

  async withdraw(replica: string, agents: string[]): Promise<void> {
    if (agents.length === 0) return;
    const batch = this.redis.multi();
    for (const agent of agents) batch.hdel(agentKey(agent), replica);
    await batch.exec();
  }

  /** The replicas holding live connections of `agent`, with the servers up on each. */
  async replicas(agent: string): Promise<Map<string, ReplicaEntry>> {
    const fields = await this.redis.hgetall(agentKey(agent));
    const now = Date.now();
    const live = new Map<string, ReplicaEntry>();
    for (const [replica, text] of Object.entries(fields)) {
      const entry = parseJson(text) as ReplicaEntry | undefined;
      if (entry && entry.until > now && Array.isArray(entry.servers)) live.set(replica, entry);
    }
    return live;
  }

  async session(id: string): Promise<SessionRecord | undefined> {
    const text = await this.redis.get(sessionKey(id));
    return text === null ? undefined : (parseJson(text) as SessionRecord | undefined);
  }

  async forgetSession(id: string): Promise<void> {
    await this.redis.del(sessionKey(id));
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
