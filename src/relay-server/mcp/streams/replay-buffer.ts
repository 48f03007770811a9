import { randomBytes } from 'node:crypto';
import { parseJson } from '../../../common/json/lossless-json.js';
import { idOf, type JsonRpcId, stringifyMessage } from '../../json-rpc/json-rpc.js';
import { encodeEvent, type LazyEventStream } from './lazy-event-stream.js';
import type { StreamBudget } from './stream-budget.js';

/** Why an event was not kept (`bound`, `budget`) or a resume missed some (`resume`). */
export type ReplayDrop = 'bound' | 'budget' | 'resume';

/** How many request streams' last event ids a session remembers once they are answered. */
const ANSWERS_KEPT = 32;

interface Stream {
  /** The last event's number; the priming event is 0. */
  n: number;
  /** Where it writes now: its POST's connection, or a GET's that resumed it (none before a GET). */
  writer?: LazyEventStream;
  /** A priming event is due before its first event. */
  priming: boolean;
  /** A request's answer, kept: no connection took it. */
  done?: true;
}

// Resumability: at most `limit` bytes kept, oldest out first, counted in the client's StreamBudget.
// A request stream's id carries its request's id, and a random tag keeps other sessions' ids out.
export class ReplayBuffer {
  private readonly tag = randomBytes(6).toString('base64url');
  readonly listen = `${this.tag}.0`;
  // Made before the client opens the GET: it opens it while its next requests are under way, and
  // what the server says about them first is kept for it.
  private readonly streams = new Map<string, Stream>([[this.listen, { n: 0, priming: false }]]);
  private kept: { stream: string; n: number; event: Buffer }[] = [];
  /** Answered request streams: the number of the event that answered each. */
  private readonly answers = new Map<string, number>();
  private bytes = 0;
  private count = 0;
  private cleared = false;

  constructor(
    private readonly limit: number,
    private readonly budget: StreamBudget,
    private readonly client: string,
    private readonly onDropped: (why: ReplayDrop) => void,
  ) {}

  /** A stream on `writer`: `request`'s, or without one the GET stream (it goes on). */
  open(writer: LazyEventStream, priming: boolean, request?: unknown): string | undefined {
    const id = idOf(request);
    const encoded = id === null ? '' : Buffer.from(stringifyMessage(id)).toString('base64url');
    if ((request && !encoded) || encoded.length > 256) return undefined;
    const key = request ? `${this.tag}.${++this.count}.${encoded}` : this.listen;
    const before = this.streams.get(key);
    this.streams.set(key, { n: before?.n ?? 0, writer, priming });
    if (request) return key;
    if (before && !before.writer) this.resume(`${key}.0`, writer);
    this.start(key);
    return key;
  }

  /** Writes the priming event, if due: the client may resume from it. */
  start(key: string): void {
    const stream = this.streams.get(key);
    if (!stream?.priming) return;
    stream.priming = false;
    // `retry`: what a client waits before it resumes a stream.
    stream.writer?.send(Buffer.from(`id: ${key}.${stream.n}\nretry: 1000\ndata: \n\n`));
  }

  send(key: string, event: Buffer): void {
    const stream = this.streams.get(key);
    if (!stream) return;
    this.start(key);
    const numbered = this.number(key, stream, event);
    this.keep(key, stream.n, numbered);
    stream.writer?.send(numbered);
  }

  /** A request's answer as an event once its stream has started, else false (it goes as JSON). */
  finish(key: string, body: unknown): boolean {
    const stream = this.streams.get(key);
    if (!stream?.writer?.started) {
      this.forget(key);
      return false;
    }
    const event = this.number(key, stream, encodeEvent(body));
    if (stream.writer.end(event)) this.answered(key, stream.n);
    else {
      stream.done = true;
      this.keep(key, stream.n, event);
    }
    return true;
  }

  /** Replays stream `<key>.<n>` after n on `writer`, which it then writes to; false if none. */
  resume(lastEventId: string, writer: LazyEventStream): boolean {
    const [, key = '', digits = ''] = /^(.+)\.(\d{1,9})$/.exec(lastEventId) ?? [];
    const stream = this.streams.get(key);
    const after = Number(digits);
    if (!stream || !digits || after > stream.n) return false;
    const missed = this.kept.filter((kept) => kept.stream === key && kept.n > after);
    const answer = stream.done ? missed.pop() : undefined;
    if (stream.done && answer?.n !== stream.n) {
      this.forget(key);
      return false;
    }
    if ((missed[0]?.n ?? answer?.n ?? stream.n + 1) !== after + 1) this.onDropped('resume');
    stream.writer = writer;
    writer.start();
    for (const { event } of missed) writer.send(event);
    if (answer && writer.end(answer.event)) this.answered(key, answer.n);
    return true;
  }

  // Whether `lastEventId` is a request's answer. SDK 1.x clients resume even after an error answer,
  // and again after each resume without a result; a 204 (no stream) stops them.
  complete(lastEventId: string): boolean {
    const [, key = '', digits = ''] = /^(.+)\.(\d{1,9})$/.exec(lastEventId) ?? [];
    return digits !== '' && this.answers.get(key) === Number(digits);
  }

  /** Ends `writer` with the lost answer as its stream's next event, so a resume is `complete`. */
  lost(lastEventId: string, writer: LazyEventStream, body: unknown): void {
    const [, key = '', digits = ''] = /^(.+)\.(\d{1,9})$/.exec(lastEventId) ?? [];
    const n = Number(digits) + 1;
    this.answered(key, n);
    writer.end(Buffer.concat([Buffer.from(`id: ${key}.${n}\n`), encodeEvent(body)]));
  }

  /** The session ended: what it kept goes; streams under way still reach their connections. */
  clear(): void {
    this.cleared = true;
    this.budget.release(this.client, this.bytes);
    this.kept = [];
    this.bytes = 0;
  }

  private number(key: string, stream: Stream, event: Buffer): Buffer {
    stream.n += 1;
    return Buffer.concat([Buffer.from(`id: ${key}.${stream.n}\n`), event]);
  }

  private keep(stream: string, n: number, event: Buffer): void {
    if (this.cleared) return;
    if (event.length > this.limit) return this.onDropped('bound');
    if (this.budget.take(this.client, 0, event.length) !== undefined) {
      return this.onDropped('budget');
    }
    this.kept.push({ stream, n, event });
    this.bytes += event.length;
    while (this.bytes > this.limit) this.drop(0, 'bound');
  }

  /** `key`'s stream answered with its event `n`: what it kept goes, its answer's id stays. */
  private answered(key: string, n: number): void {
    this.forget(key);
    this.answers.delete(key);
    this.answers.set(key, n);
    for (const old of this.answers.keys()) {
      if (this.answers.size <= ANSWERS_KEPT) break;
      this.answers.delete(old);
    }
  }

  private forget(key: string): void {
    this.streams.delete(key);
    for (let i = this.kept.length - 1; i >= 0; i -= 1) {
      if (this.kept[i]?.stream === key) this.drop(i);
    }
  }

  private drop(index: number, why?: ReplayDrop): void {
    const [gone] = this.kept.splice(index, 1);
    if (!gone) return;
    this.bytes -= gone.event.length;
    this.budget.release(this.client, gone.event.length);
    if (why) this.onDropped(why);
  }
}

/** The request a stream's `Last-Event-ID` names; undefined for the GET stream or another id. */
export function requestOf(lastEventId: string): JsonRpcId | undefined {
  const [, encoded] = /^[\w-]+\.\d+\.([\w-]{1,256})\.\d+$/.exec(lastEventId) ?? [];
  if (encoded === undefined) return undefined;
  try {
    return idOf({ id: parseJson(Buffer.from(encoded, 'base64url').toString()) }) ?? undefined;
  } catch {
    return undefined;
  }
}
