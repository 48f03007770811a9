import { describe, expect, it } from 'vitest';
import type { RelayConfig } from '../../config/relay-config.js';
import type { LazyEventStream } from './lazy-event-stream.js';
import { StreamBudget } from './stream-budget.js';
import { ReplayBuffer, type ReplayDrop, requestOf } from './replay-buffer.js';

/** A connection's stream: what was written to it, and whether it is still there. */
function connection(open = true) {
  const written: string[] = [];
  const writer = {
    started: false,
    open,
    ended: false,
    written,
    start: () => (writer.started = true),
    send: (event: Buffer) => {
      writer.started = true;
      if (writer.open) written.push(event.toString());
    },
    end: (event?: Buffer) => {
      if (!writer.open) return false;
      if (event) written.push(event.toString());
      writer.ended = true;
      return true;
    },
  };
  return writer;
}
const asStream = (writer: ReturnType<typeof connection>) => writer as unknown as LazyEventStream;
const progress = (n: number) => Buffer.from(`event: message\ndata: {"n":${n}}\n\n`);
/** The ids and data of the events written. */
const events = (written: string[]) =>
  written.map((text) => text.replace(/\nevent: message\n/, ' ').replace(/\n+$/, ''));

function setUp(limit = 1000, perClient = 10_000) {
  const budget = new StreamBudget({
    maxFrameBytes: 1000,
    maxStreamBufferBytesPerClient: perClient,
    maxStreamBufferBytes: 100_000,
  } as RelayConfig);
  const dropped: ReplayDrop[] = [];
  const onDropped = (why: ReplayDrop) => dropped.push(why);
  return { budget, dropped, buffer: new ReplayBuffer(limit, budget, 'a', onDropped) };
}

describe('ReplayBuffer', () => {
  it('numbers a request stream after its priming event and replays what a client missed', () => {
    const { buffer, budget, dropped } = setUp();
    const post = connection();
    const key = buffer.open(asStream(post), true, { id: 7 })!;
    expect(requestOf(`${key}.0`)).toBe(7);
    buffer.send(key, progress(1));
    post.open = false;
    buffer.send(key, progress(2));
    expect(buffer.finish(key, { jsonrpc: '2.0', id: 7, result: {} })).toBe(true);
    expect(events(post.written)).toEqual([
      `id: ${key}.0\nretry: 1000\ndata: `,
      `id: ${key}.1 data: {"n":1}`,
    ]);
    const get = connection();
    expect(buffer.resume(`${key}.1`, asStream(get))).toBe(true);
    expect(events(get.written)).toEqual([
      `id: ${key}.2 data: {"n":2}`,
      `id: ${key}.3 data: {"jsonrpc":"2.0","id":7,"result":{}}`,
    ]);
    expect(get.ended).toBe(true);
    // Delivered, the stream and what it kept are gone.
    expect(buffer.resume(`${key}.1`, asStream(connection()))).toBe(false);
    expect(budget.heldBy('a')).toBe(0);
    expect(dropped).toEqual([]);
  });

  it('knows a resume from an answer has it all, and numbers the error of a lost stream', () => {
    // SDK 1.x clients resume a stream that answered with an error, and resume that resume.
    const { buffer } = setUp();
    const post = connection();
    const key = buffer.open(asStream(post), true, { id: 7 })!;
    buffer.start(key);
    expect(buffer.finish(key, { jsonrpc: '2.0', id: 7, error: { code: -32602 } })).toBe(true);
    expect(buffer.complete(`${key}.1`)).toBe(true);
    expect(buffer.complete(`${key}.0`)).toBe(false);
    const get = connection();
    expect(buffer.resume(`${key}.0`, asStream(get))).toBe(false);
    buffer.lost(`${key}.0`, asStream(get), { jsonrpc: '2.0', id: 7, error: { code: -32001 } });
    expect(events(get.written)).toEqual([
      `id: ${key}.1 data: {"jsonrpc":"2.0","id":7,"error":{"code":-32001}}`,
    ]);
    expect(get.ended).toBe(true);
    expect(buffer.complete(`${key}.1`)).toBe(true);
    expect(buffer.complete('made-up')).toBe(false);
  });

  it('remembers the answers of its last 32 request streams only', () => {
    const { buffer } = setUp();
    const keys = Array.from({ length: 33 }, (_, id) => {
      const key = buffer.open(asStream(connection()), true, { id })!;
      buffer.start(key);
      buffer.finish(key, { jsonrpc: '2.0', id, result: {} });
      return key;
    });
    expect(keys.map((key) => buffer.complete(`${key}.1`))).toEqual([
      false,
      ...Array<boolean>(32).fill(true),
    ]);
  });

  it("gives a stream's events only to a resume of that stream", () => {
    const { buffer } = setUp();
    const first = buffer.open(asStream(connection()), true, { id: 1 })!;
    const other = buffer.open(asStream(connection()), true, { id: 2 })!;
    buffer.send(first, progress(1));
    buffer.send(other, progress(2));
    const get = connection();
    expect(buffer.resume(`${other}.0`, asStream(get))).toBe(true);
    expect(events(get.written)).toEqual([`id: ${other}.1 data: {"n":2}`]);
    // Another session's ids name nothing here.
    const elsewhere = setUp().buffer.open(asStream(connection()), true, { id: 1 })!;
    expect(buffer.resume(`${elsewhere}.0`, asStream(connection()))).toBe(false);
    expect(buffer.resume('made-up', asStream(connection()))).toBe(false);
  });

  it('goes on with the GET stream, keeping what comes while no connection is open', () => {
    const { buffer } = setUp();
    const first = connection();
    expect(buffer.open(asStream(first), true)).toBe(buffer.listen);
    buffer.send(buffer.listen, progress(1));
    first.open = false;
    buffer.send(buffer.listen, progress(2));
    const again = connection();
    expect(buffer.resume(`${buffer.listen}.1`, asStream(again))).toBe(true);
    buffer.send(buffer.listen, progress(3));
    expect(events(again.written)).toEqual([
      `id: ${buffer.listen}.2 data: {"n":2}`,
      `id: ${buffer.listen}.3 data: {"n":3}`,
    ]);
    expect(again.ended).toBe(false);
  });

  it("gives the session's first GET stream what came before it opened", () => {
    // A client opens its GET stream while its next requests are already under way: a server's
    // log message about one of them may come first.
    const { buffer } = setUp();
    buffer.send(buffer.listen, progress(1));
    const get = connection();
    buffer.open(asStream(get), true);
    buffer.send(buffer.listen, progress(2));
    expect(events(get.written)).toEqual([
      `id: ${buffer.listen}.1 data: {"n":1}`,
      `id: ${buffer.listen}.1\nretry: 1000\ndata: `,
      `id: ${buffer.listen}.2 data: {"n":2}`,
    ]);
    // A later GET without Last-Event-ID is a new stream: nothing is replayed on it.
    const later = connection();
    buffer.open(asStream(later), false);
    expect(later.written).toEqual([]);
  });

  it('keeps at most its limit, counted in the budget, and counts what it drops', () => {
    const event = progress(1).length + `id: x.1\n`.length;
    const { buffer, budget, dropped } = setUp(2 * event + 40, 10_000);
    const get = connection(false);
    buffer.open(asStream(get), false);
    for (let n = 1; n <= 4; n += 1) buffer.send(buffer.listen, progress(n));
    expect(dropped).toEqual(['bound', 'bound']);
    expect(budget.heldBy('a')).toBeLessThanOrEqual(2 * event + 40);
    const again = connection();
    // Events 1 and 2 are gone: the resume gets what is left, and is counted.
    expect(buffer.resume(`${buffer.listen}.0`, asStream(again))).toBe(true);
    expect(events(again.written).map((text) => text.split(' ')[1])).toEqual([
      `${buffer.listen}.3`,
      `${buffer.listen}.4`,
    ]);
    expect(dropped).toEqual(['bound', 'bound', 'resume']);
    buffer.clear();
    expect(budget.heldBy('a')).toBe(0);
  });

  it('keeps nothing past the client budget, and refuses a request stream whose answer is gone', () => {
    const { buffer, dropped } = setUp(10_000, 50);
    const post = connection();
    const key = buffer.open(asStream(post), false, { id: 'x' })!;
    buffer.send(key, progress(1));
    post.open = false;
    buffer.finish(key, { jsonrpc: '2.0', id: 'x', result: {} });
    expect(dropped).toEqual(['budget', 'budget']);
    expect(buffer.resume(`${key}.1`, asStream(connection()))).toBe(false);
  });

  it('leaves a stream that never started to its JSON answer', () => {
    const { buffer } = setUp();
    const key = buffer.open(asStream(connection()), true, { id: 3 })!;
    expect(buffer.finish(key, { jsonrpc: '2.0', id: 3, result: {} })).toBe(false);
    buffer.start(key);
    expect(buffer.resume(`${key}.0`, asStream(connection()))).toBe(false);
  });
});
