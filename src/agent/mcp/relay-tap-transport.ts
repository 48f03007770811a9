import type {
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/client';

/**
 * Lets the relay share a child's MCP session with the SDK Client that initialized it. Relayed
 * requests carry ids of their own (`relay:<n>`), so their answers go to the relay, not to the
 * Client (which would drop them). Notifications go to both, progress ones to the relay only;
 * the child's requests for its client (sampling, elicitation, roots) go to the relay, which
 * asks the client it serves. It keeps the child's `initialize` result for the relay to replay.
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
