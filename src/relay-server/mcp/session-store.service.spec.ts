import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentConnection } from '../agents/agent-connection.js';
import type { RelayConfig } from '../config/relay-config.js';
import { SessionStore } from './session-store.service.js';

const open = { open: true } as AgentConnection;
const config = { sessionIdleMs: 60_000, maxSessionsPerClient: 2 } as RelayConfig;

describe('SessionStore', () => {
  let store: SessionStore;
  beforeEach(() => {
    vi.useFakeTimers();
    store = new SessionStore(config);
  });
  afterEach(() => vi.useRealTimers());

  it('finds a session only for its own client, agent and server', () => {
    const session = store.create('alice', 'shop', 'echo', open);
    expect(store.find(session.id, 'alice', 'shop', 'echo')).toBe(session);
    expect(store.find(session.id, 'bob', 'shop', 'echo')).toBeUndefined();
    expect(store.find(session.id, 'alice', 'lab', 'echo')).toBeUndefined();
    expect(store.find(session.id, 'alice', 'shop', 'other')).toBeUndefined();
  });

  it('forgets a session whose connection closed', () => {
    const connection = { open: true } as { open: boolean };
    const session = store.create('alice', 'shop', 'echo', connection as AgentConnection);
    connection.open = false;
    expect(store.find(session.id, 'alice', 'shop', 'echo')).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('ends sessions idle past the limit, but not one with a request in flight', () => {
    const idle = store.create('alice', 'shop', 'echo', open);
    const busy = store.create('bob', 'shop', 'echo', open);
    busy.inFlight.set('1', 1);
    const used = store.create('carol', 'shop', 'echo', open);
    vi.advanceTimersByTime(50_000);
    store.find(used.id, 'carol', 'shop', 'echo');
    vi.advanceTimersByTime(20_000);
    store.sweep();
    expect(store.find(idle.id, 'alice', 'shop', 'echo')).toBeUndefined();
    expect(store.find(busy.id, 'bob', 'shop', 'echo')).toBe(busy);
    expect(store.find(used.id, 'carol', 'shop', 'echo')).toBe(used);
  });

  it("ends a client's least recently used session past its cap, and only that client's", () => {
    const other = store.create('bob', 'shop', 'echo', open);
    const first = store.create('alice', 'shop', 'echo', open);
    const second = store.create('alice', 'shop', 'echo', open);
    store.find(first.id, 'alice', 'shop', 'echo'); // first is now the most recently used
    const third = store.create('alice', 'shop', 'echo', open);
    expect(store.find(second.id, 'alice', 'shop', 'echo')).toBeUndefined();
    expect(store.find(first.id, 'alice', 'shop', 'echo')).toBe(first);
    expect(store.find(third.id, 'alice', 'shop', 'echo')).toBe(third);
    expect(store.find(other.id, 'bob', 'shop', 'echo')).toBe(other);
  });
});
