import { randomBytes } from 'node:crypto';
import {
  isObject,
  JsonRpcCode,
  jsonRpcError,
  type JsonRpcId,
  type JsonRpcResponse,
  type Message,
} from '../../json-rpc/json-rpc.js';

/** Where a 2025 server may name the key of its request for its client, so clients can rely on it. */
export const INPUT_KEY_META = 'io.plantstore/inputKey';

/** The methods a 2026 server may answer `input_required` (MCP 2026-07-28, MRTR). */
export const INPUT_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Server requests sent together arrive within this: they go to the client in one round. */
const GATHER_MS = 20;

/** A client request whose server asked its client something, held between the client's rounds. */
export interface HeldCall {
  client: string;
  /** `method` and `name`/`uri` of the first request: a retry must repeat them. */
  request: string;
  /** The server's final answer (already in 2026 form). */
  answer: Promise<JsonRpcResponse>;
  /** The server's requests waiting for the client, by input key. */
  asked: Map<string, Message>;
  /** This round's `inputResponses`: a request whose key they hold is answered at once. */
  pool: Message;
  /** Passes the client's answer to one of the server's requests on to the agent. */
  reply: (message: Message) => void;
  /** Cancels the call on the server (its client hung up while waiting for it). */
  cancel: AbortController;
  wake?: (() => void) | undefined;
  keys: number;
}

// MRTR: a server's request to its client becomes an `input_required` result (docs/relay-server.md).
// Each state is a random handle bound to client, request and round: a forged or stale one fails.
export class HeldCalls {
  readonly #calls = new Map<string, HeldCall>();

  /** `replicaTag`: this replica's tag, put in each state so a retry can be placed here. */
  constructor(private readonly replicaTag: () => string = () => '') {}

  /** Keeps a server request of `call`'s for its client; passes the rest (progress) to `next`. */
  static catch(call: HeldCall, message: Message, next?: (message: Message) => void): void {
    if (typeof message.method !== 'string' || message.id === undefined) return next?.(message);
    const key = keyOf(call, message);
    if (isObject(call.pool[key])) return call.reply(answer(message, call.pool[key]));
    call.asked.set(key, message);
    call.wake?.();
  }

  /** The held call a retry's `requestState` names; undefined when it names none of this client's. */
  take(state: unknown, client: string, request: string): HeldCall | undefined {
    const call = typeof state === 'string' ? this.#calls.get(state) : undefined;
    if (call?.client !== client || call.request !== request) return undefined;
    this.#calls.delete(state as string);
    return call;
  }

  /** Answers the server's requests the retry's `inputResponses` answer; keeps the rest asked. */
  resume(call: HeldCall, pool: Message): void {
    call.pool = pool;
    for (const [key, asked] of call.asked) {
      if (!isObject(pool[key])) continue;
      call.asked.delete(key);
      call.reply(answer(asked, pool[key]));
    }
  }

  /** The server's answer, or the client's next round: what it must answer, and a new state. */
  async next(call: HeldCall, id: JsonRpcId, hungUp: AbortSignal): Promise<JsonRpcResponse> {
    const done = call.asked.size === 0 ? await this.#wait(call, hungUp) : undefined;
    if (done) return { ...done, id };
    const random = randomBytes(18).toString('base64url');
    const tag = this.replicaTag();
    const state = tag === '' ? random : `${tag}.${random}`;
    this.#calls.set(state, call);
    void call.answer.finally(() => this.#calls.delete(state));
    const inputRequests = Object.fromEntries(
      [...call.asked].map(([key, { method, params }]) => [key, { method, params: params ?? {} }]),
    );
    const result = { resultType: 'input_required', inputRequests, requestState: state };
    return { jsonrpc: '2.0', id, result };
  }

  /** The server's answer, or undefined once it asked something (and its batch has arrived). */
  async #wait(call: HeldCall, hungUp: AbortSignal): Promise<JsonRpcResponse | undefined> {
    const onHangUp = () => call.cancel.abort('client disconnected');
    if (hungUp.aborted) onHangUp();
    hungUp.addEventListener('abort', onHangUp, { once: true });
    try {
      const asked = new Promise<undefined>((resolve) => (call.wake = () => resolve(undefined)));
      const answer = await Promise.race([call.answer, asked]);
      if (answer) return answer;
      await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
      return undefined;
    } finally {
      call.wake = undefined;
      hungUp.removeEventListener('abort', onHangUp);
    }
  }
}

/** Why a request's `inputResponses` are refused (-32602), if they are. */
export function badInputResponses(message: Message): JsonRpcResponse | undefined {
  const params = isObject(message.params) ? message.params : {};
  if (!('inputResponses' in params)) return undefined;
  const responses = params.inputResponses;
  const valid = isObject(responses) && Object.values(responses).every(isObject);
  if (valid) return undefined;
  const reason = 'inputResponses must be an object of results, one per input request';
  return jsonRpcError(message.id as JsonRpcId, JsonRpcCode.InvalidParams, reason);
}

/** The request as its 2025 server takes it: without the client's MRTR members. */
export function withoutInputs(message: Message): Message {
  if (!isObject(message.params)) return message;
  const params = { ...message.params };
  delete params.inputResponses;
  delete params.requestState;
  return { ...message, params };
}

/** The replica tag a retry's `requestState` starts with (`<tag>.<random>`), if any. */
export function heldBy(message: unknown): string | undefined {
  const params = isObject(message) && isObject(message.params) ? message.params : {};
  const state = params.requestState;
  const dot = typeof state === 'string' ? state.indexOf('.') : -1;
  return dot > 0 ? (state as string).slice(0, dot) : undefined;
}

/** `method` and the `name` or `uri` it is about: what a retry must repeat. */
export function requestKey(message: Message): string {
  const params = isObject(message.params) ? message.params : {};
  return JSON.stringify([message.method, params.name ?? params.uri]);
}

/** The key a server named in its request's `_meta`, else one of the relay's own. */
function keyOf(call: HeldCall, message: Message): string {
  const meta = isObject(message.params) ? message.params._meta : undefined;
  const named = isObject(meta) ? meta[INPUT_KEY_META] : undefined;
  if (typeof named === 'string' && named !== '' && !call.asked.has(named)) return named;
  return `input-${++call.keys}`;
}

function answer(asked: Message, result: Message): Message {
  return { jsonrpc: '2.0', id: asked.id, result };
}
