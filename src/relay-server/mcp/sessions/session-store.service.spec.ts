import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentConnection } from '../../agents/agent-connection.js';
import type { RelayConfig } from '../../config/relay-config.js';
import { SessionStore } from './session-store.service.js';

const pin = { server: 'echo', connection: { open: true } as AgentConnection };
const config = { sessionIdleMs: 60_000, maxSessionsPerClient: 2 } as RelayConfig;
const at = (sessionId: string, client: string, agent: string, server: string | undefined) => ({
  sessionId,
  client,
  agent,
  server,
});

describe('SessionStore', () => {
  let store: SessionStore;
  beforeEach(() => {
    vi.useFakeTimers();
    store = new SessionStore(config);
  });
  afterEach(() => vi.useRealTimers());

  it('finds a session only for its own client, agent and server', () => {
    const session = store.create('alice', 'shop', pin);
    expect(store.find(at(session.id, 'alice', 'shop', 'echo'))).toBe(session);
    expect(store.find(at(session.id, 'bob', 'shop', 'echo'))).toBeUndefined();
    expect(store.find(at(session.id, 'alice', 'lab', 'echo'))).toBeUndefined();
    expect(store.find(at(session.id, 'alice', 'shop', 'other'))).toBeUndefined();
    expect(store.find(at(session.id, 'alice', 'shop', undefined))).toBeUndefined();
  });

  it('tells only of sessions ended for good, not of those that merely left this replica', () => {
    const ended: string[] = [];
    store.onEnd((id) => ended.push(id));
    const kept = store.create('alice', 'shop', pin);
    const gone = store.create('alice', 'shop', pin);
    store.drop(kept.id);
    store.delete(gone.id);
    store.delete(gone.id);
    expect(ended).toEqual([gone.id]);
    expect(store.holds(kept.id)).toBe(false);
  });

  it('takes over a session with its id and logging wish, once', () => {
    const taken = store.adopt(
      'a-moved-id',
      { client: 'alice', agent: 'shop', wantsLogging: true },
      pin,
    );
    expect(store.find(at('a-moved-id', 'alice', 'shop', 'echo'))).toBe(taken);
    expect(taken.wantsLogging).toBe(true);
    expect(store.adopt('a-moved-id', { client: 'alice', agent: 'shop' }, pin)).toBe(taken);
    expect(store.list()).toHaveLength(1);
  });

  it('counts open sessions per agent, the agents named included with 0', () => {
    const first = store.create('alice', 'shop', pin);
    store.create('bob', 'shop');
    store.create('bob', 'lab', pin);
    expect(store.countByAgent(['shop', 'lab', 'idle'])).toEqual(
      new Map([
        ['shop', 2],
        ['lab', 1],
        ['idle', 0],
      ]),
    );
    store.delete(first.id);
    expect(store.countByAgent([]).get('shop')).toBe(1);
  });

  it("keeps an aggregate session apart from the agent's per-server ones", () => {
    const aggregate = store.create('alice', 'shop');
    expect(store.find(at(aggregate.id, 'alice', 'shop', undefined))).toBe(aggregate);
    expect(store.find(at(aggregate.id, 'alice', 'shop', 'echo'))).toBeUndefined();
    expect(store.find(at(aggregate.id, 'alice', 'lab', undefined))).toBeUndefined();
  });

  it("sends an aggregate notification to the streams of that agent's aggregate sessions only", () => {
    const got: string[] = [];
    const stream = (name: string) => ({ send: () => got.push(name), end: () => undefined });
    store.create('alice', 'shop').stream = stream('shop aggregate');
    store.create('bob', 'lab').stream = stream('lab aggregate');
    store.create('carol', 'shop', pin).stream = stream('shop echo');
    store.broadcastAggregate('shop', { method: 'notifications/tools/list_changed' });
    expect(got).toEqual(['shop aggregate']);
  });

  it('forgets a session whose connection closed', () => {
    const connection = { open: true } as { open: boolean };
    const session = store.create('alice', 'shop', {
      server: 'echo',
      connection: connection as AgentConnection,
    });
    connection.open = false;
    expect(store.find(at(session.id, 'alice', 'shop', 'echo'))).toBeUndefined();
    expect(store.list()).toHaveLength(0);
  });

  it('ends sessions idle past the limit, but not one with a request in flight', () => {
    const idle = store.create('alice', 'shop', pin);
    const busy = store.create('bob', 'shop', pin);
    busy.inFlight.set('1', new AbortController());
    const used = store.create('carol', 'shop', pin);
    vi.advanceTimersByTime(50_000);
    store.find(at(used.id, 'carol', 'shop', 'echo'));
    vi.advanceTimersByTime(20_000);
    store.sweep();
    expect(store.find(at(idle.id, 'alice', 'shop', 'echo'))).toBeUndefined();
    expect(store.find(at(busy.id, 'bob', 'shop', 'echo'))).toBe(busy);
    expect(store.find(at(used.id, 'carol', 'shop', 'echo'))).toBe(used);
  });

  it("ends a client's least recently used session past its cap, and only that client's", () => {
    const other = store.create('bob', 'shop', pin);
    const first = store.create('alice', 'shop', pin);
    const second = store.create('alice', 'shop', pin);
    store.find(at(first.id, 'alice', 'shop', 'echo')); // first is now the most recently used
    const third = store.create('alice', 'shop', pin);
    expect(store.find(at(second.id, 'alice', 'shop', 'echo'))).toBeUndefined();
    expect(store.find(at(first.id, 'alice', 'shop', 'echo'))).toBe(first);
    expect(store.find(at(third.id, 'alice', 'shop', 'echo'))).toBe(third);
    expect(store.find(at(other.id, 'bob', 'shop', 'echo'))).toBe(other);
  });
});
