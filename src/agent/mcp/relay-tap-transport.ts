import type {
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/client';

/**
 * Lets the relay share one MCP session with the SDK Client that owns it.
 *
 * The agent initializes each child once, with the SDK Client (which also pings it and lists
 * its tools). Requests relayed from the agent's server go down the same stdio pipe with ids
 * in their own namespace (`relay:<n>`, strings; the Client uses numbers), so their responses
 * can be told apart here and handed to the relay instead of the Client, which would drop them
 * as unknown. The child's notifications go to both; progress notifications only to the relay,
 * since only relayed requests carry progress tokens. The child's requests for its client
 * (sampling, elicitation, roots) go only to the relay, which asks the client whose request the
 * child is serving; the Client answers the rest (ping).
 *
 * It also keeps the child's raw `initialize` result, which the relay answers the server's own
 * `initialize` with.
 */
export const RELAY_ID_PREFIX = 'relay:';

/** What an MCP server may ask its client for, and the client capability each needs. */
export const CLIENT_REQUEST_CAPABILITY: Readonly<Record<string, string>> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

export function isRelayId(id: unknown): id is string {
  return typeof id === 'string' && id.startsWith(RELAY_ID_PREFIX);
}

export class RelayTapTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  /** Receives relayed responses and the child's notifications. */
  relayListener?: (message: JSONRPCMessage) => void;

  #initializeId: string | number | undefined;
  #initializeResult: Record<string, unknown> | undefined;

  constructor(private readonly inner: Transport) {
    inner.onmessage = (message) => this.#fromChild(message);
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  /** The `result` of the child's answer to the Client's `initialize`, as sent. */
  get initializeResult(): Record<string, unknown> | undefined {
    return this.#initializeResult;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** From the SDK Client. */
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if ('method' in message && message.method === 'initialize' && 'id' in message) {
      this.#initializeId = message.id;
    }
    return this.inner.send(message, options);
  }

  /** From the relay: a request with a relay id, or a notification. */
  sendRelay(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }

  #fromChild(message: JSONRPCMessage): void {
    if (!('method' in message)) {
      if (isRelayId(message.id)) {
        this.relayListener?.(message);
        return;
      }
      if (message.id === this.#initializeId && 'result' in message) {
        this.#initializeResult = message.result;
      }
    } else if (!('id' in message)) {
      this.relayListener?.(message);
      if (message.method === 'notifications/progress') return;
    } else if (Object.hasOwn(CLIENT_REQUEST_CAPABILITY, message.method)) {
      this.relayListener?.(message);
      return;
    }
    this.onmessage?.(message);
  }
}
