import { deserializeMessage, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { TokenBucket } from '../../common/logging/token-bucket.js';
import { depthExceeds } from '../../agent-protocol/frame-codec.js';
import { RelayErrorCode, rpcError } from '../../agent-protocol/relay-protocol.js';

/**
 * A child's stdout, split into JSON-RPC messages at a bounded cost: a flood through the SDK's
 * ReadBuffer took the plant API's median from 2.5 to 40 ms. Garbage (an endless line too) is
 * charged to token buckets of lines and bytes; so is what the child sends unasked, as a flood
 * of notifications or of answers to ids nobody waits for took the median from 17 ms to
 * seconds. Unknown answers are dropped; any budget spent, `flood` fires once.
 */
const DEFAULT_STDOUT_LIMITS = {
  /**
   * A longer line is dropped while it arrives (never buffered whole). Over the relay's 4 MiB
   * frame limit on purpose: a 4-8 MiB answer is still read, so the relay can answer its
   * request with a clear -32004 rather than the timeout.
   */
  maxLineBytes: 8 * 1024 * 1024,
  /**
   * Deeper messages are dropped (answered -32004): 6,000 levels overflow the SDK's stack. One
   * level under the relay's frame limit (100): the frame wraps the message.
   */
  maxDepth: 99,
  /** Garbage lines allowed at once, and per second after that. */
  lineBudget: { burst: 200, ratePerSecond: 20 },
  /** Garbage bytes (oversized lines included) allowed at once, and per second after that. */
  byteBudget: { burst: 16 * 1024 * 1024, ratePerSecond: 256 * 1024 },
  /** Notifications and requests from the child allowed at once, and per second after that. */
  notificationBudget: { burst: 2_000, ratePerSecond: 200 },
  /** Answers to ids nobody waits for allowed at once, and per second after that. */
  unknownAnswerBudget: { burst: 100, ratePerSecond: 10 },
  /** Request ids remembered at most. */
  maxOutstanding: 10_000,
};

export type StdoutLimits = typeof DEFAULT_STDOUT_LIMITS & { now?: () => number };

export interface GarbageLine {
  bytes: number;
  /** The line's first bytes (cut), for a log line. */
  sample: string;
  /** Why it is not a message. */
  reason: string;
}

export interface StdoutReaderSink {
  message(message: JSONRPCMessage): void;
  garbage(line: GarbageLine): void;
  /** An answer to an id nobody waits for (dropped). */
  unknownAnswer(id: unknown): void;
  /** A budget is spent: the child should be restarted. Called once. */
  flood(budget: 'garbage' | 'unsolicited', reason: string): void;
}

const NEWLINE = 0x0a;
const OPEN_BRACE = 0x7b;
const SAMPLE_BYTES = 200;
/** How much of an oversized line is kept, at each end, to find a relay id in it. */
const EDGE_BYTES = 1_024;

export class StdoutReader {
  readonly #limits: StdoutLimits;
  readonly #lineBudget: TokenBucket;
  readonly #byteBudget: TokenBucket;
  readonly #notificationBudget: TokenBucket;
  readonly #answerBudget: TokenBucket;
  /** Ids of the requests sent to the child; insertion-ordered, so the oldest is evicted first. */
  readonly #outstanding = new Set<string>();
  #chunks: Buffer[] = [];
  #pending = 0;
  /** Inside a line over the limit: its head and byte count, the rest is dropped. */
  #oversized: { head: Buffer; tail: Buffer; bytes: number } | undefined;
  #flooded = false;
  garbageLines = 0;
  garbageBytes = 0;
  notifications = 0;
  unknownAnswers = 0;

  constructor(
    private readonly sink: StdoutReaderSink,
    limits: Partial<StdoutLimits> = {},
  ) {
    this.#limits = { ...DEFAULT_STDOUT_LIMITS, ...limits };
    const { now } = this.#limits;
    this.#lineBudget = new TokenBucket({ ...this.#limits.lineBudget, now });
    this.#byteBudget = new TokenBucket({ ...this.#limits.byteBudget, now });
    this.#notificationBudget = new TokenBucket({ ...this.#limits.notificationBudget, now });
    this.#answerBudget = new TokenBucket({ ...this.#limits.unknownAnswerBudget, now });
  }

  /** Takes the next chunk; it is kept until its line ends, so the caller must not reuse it. */
  write(chunk: Buffer): void {
    let start = 0;
    while (!this.#flooded && start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#take(chunk.subarray(start, end));
      if (newline === -1 || this.#flooded) return;
      this.#endLine();
      start = newline + 1;
    }
  }

  /** A message sent to the child: its answer is expected, or no longer (cancelled). */
  sent(message: JSONRPCMessage): void {
    if (!('method' in message)) return;
    if ('id' in message && message.id !== undefined) {
      this.#outstanding.add(idKey(message.id));
      if (this.#outstanding.size > this.#limits.maxOutstanding) {
        const oldest = this.#outstanding.values().next().value;
        if (oldest !== undefined) this.#outstanding.delete(oldest);
      }
    } else if (message.method === 'notifications/cancelled') {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      this.#outstanding.delete(idKey(requestId));
    }
  }

  /** The child is gone: forget any unterminated line. */
  clear(): void {
    this.#chunks = [];
    this.#pending = 0;
    this.#oversized = undefined;
  }

  #take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.#oversized) {
      this.#oversized.bytes += part.length;
      this.#oversized.tail = lastBytes(Buffer.concat([this.#oversized.tail, part]), EDGE_BYTES);
      // Charged as it arrives: a line that never ends (no newline, ever) must still spend the
      // budget, or the child could cost a core forever without being restarted.
      this.#spend(0, part.length);
      return;
    }
    if (this.#pending + part.length > this.#limits.maxLineBytes) {
      const sofar = Buffer.concat([...this.#chunks, part]);
      this.clear();
      this.#oversized = {
        // A copy: a view would keep the whole line so far (up to maxLineBytes) while it goes on.
        head: Buffer.from(sofar.subarray(0, EDGE_BYTES)),
        tail: lastBytes(sofar, EDGE_BYTES),
        bytes: sofar.length,
      };
      // Garbage from now on, whether or not it ever ends: charged at once, not at its end.
      this.#garbage(sofar, `line over the ${this.#limits.maxLineBytes}-byte limit (dropped)`);
      return;
    }
    // Kept, not copied: a pipe's stream gives each read a buffer of its own and never reuses
    // it, so a 3 MB line costs its chunks and one concatenation, not a copy of each chunk too.
    this.#chunks.push(part);
    this.#pending += part.length;
  }

  #endLine(): void {
    const oversized = this.#oversized;
    if (oversized) {
      this.#oversized = undefined;
      const reason = `line of ${oversized.bytes} bytes, over the ${this.#limits.maxLineBytes}-byte limit`;
      const { head, tail } = oversized;
      const relayId = relayIdAtEdges(head.toString('latin1'), tail.toString('latin1'));
      // Whoever waits for this answer gets an error now, not at its timeout. The line was
      // charged to the budget while it arrived.
      if (relayId) this.#received(rejected(relayId, reason));
      return;
    }
    const line = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    this.clear();
    const first = firstNonBlank(line);
    if (first === -1) return; // a blank line costs nothing
    if (line[first] !== OPEN_BRACE) {
      this.#garbage(line, 'not JSON');
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line.toString('utf8'));
    } catch (error) {
      const reason = error instanceof SyntaxError ? 'not JSON' : 'JSON but not a JSON-RPC message';
      this.#garbage(line, reason);
      return;
    }
    if (depthExceeds(message, this.#limits.maxDepth)) {
      const reason = `nested deeper than ${this.#limits.maxDepth} levels`;
      // An answer (the relay's or the agent's own Client's) fails its request now.
      if (!('method' in message) && 'id' in message && message.id !== undefined)
        this.#received(rejected(message.id, reason));
      this.#garbage(line, reason);
      return;
    }
    this.#received(message);
  }

  /** Passes on a message within the budgets: an answer only to a request that was sent. */
  #received(message: JSONRPCMessage): void {
    if (this.#flooded) return;
    if ('method' in message) {
      this.notifications++;
      if (this.#notificationBudget.take()) this.sink.message(message);
      else this.#flood('unsolicited');
      return;
    }
    const id = 'id' in message ? message.id : undefined;
    if (this.#outstanding.delete(idKey(id))) return this.sink.message(message);
    this.unknownAnswers++;
    this.sink.unknownAnswer(id);
    if (!this.#answerBudget.take()) this.#flood('unsolicited');
  }

  #garbage(line: Buffer, reason: string): void {
    const sample = line.subarray(0, SAMPLE_BYTES).toString('utf8');
    this.sink.garbage({ bytes: line.length, sample, reason });
    this.#spend(1, line.length);
  }

  /** Charges garbage to the budget; over it, the child is reported once and ignored. */
  #spend(lines: number, bytes: number): void {
    if (this.#flooded) return;
    this.garbageLines += lines;
    this.garbageBytes += bytes;
    const linesLeft = lines === 0 || this.#lineBudget.take(lines);
    const bytesLeft = this.#byteBudget.drain(bytes);
    if (!linesLeft || !bytesLeft) this.#flood('garbage');
  }

  #flood(budget: 'garbage' | 'unsolicited'): void {
    this.#flooded = true;
    this.clear();
    const reason =
      budget === 'garbage'
        ? `wrote too much to stdout that is not JSON-RPC (${this.garbageLines} lines, ${this.garbageBytes} bytes)`
        : `sent too many messages nobody asked for (${this.notifications} notifications or requests, ${this.unknownAnswers} answers to unknown ids)`;
    this.sink.flood(budget, reason);
  }
}

function firstNonBlank(line: Buffer): number {
  for (let i = 0; i < line.length; i++) {
    const byte = line[i];
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return i;
  }
  return -1;
}

function lastBytes(buffer: Buffer, count: number): Buffer {
  return Buffer.from(buffer.subarray(Math.max(0, buffer.length - count)));
}

/** The relay id of an oversized answer, read only where a top-level `id` can stand. */
function relayIdAtEdges(head: string, tail: string): string | undefined {
  const id = '"id"\\s*:\\s*"(relay:\\d+)"';
  const version = '"jsonrpc"\\s*:\\s*"2\\.0"';
  return (
    new RegExp(`^\\s*\\{\\s*(?:${version}\\s*,\\s*)?${id}`).exec(head)?.[1] ??
    new RegExp(`${id}\\s*(?:,\\s*${version}\\s*)?\\}\\s*$`).exec(tail)?.[1]
  );
}

/** 1 and "1" are different ids. */
function idKey(id: unknown): string {
  return `${typeof id}:${String(id)}`;
}

function rejected(id: string | number, reason: string): JSONRPCMessage {
  const message = `answer of the MCP server dropped: ${reason}`;
  return rpcError(id, RelayErrorCode.MessageRejected, message);
}
