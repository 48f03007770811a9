import { Inject, Injectable } from '@nestjs/common';
import { RELAY_CONFIG, type RelayConfig } from '../../config/relay-config.js';

/** Which budget refused a message: the stream's own, its client's, or the relay's. */
export type StreamBudgetName = 'stream' | 'client' | 'relay';

// Unsent bytes, per client and in total, so streams a client never reads add no memory. Past a
// budget notifications are not written; answers always are, and the client gets 429 until it reads.
@Injectable()
export class StreamBudget {
  private readonly byClient = new Map<string, number>();
  private total = 0;

  constructor(@Inject(RELAY_CONFIG) private readonly config: RelayConfig) {}

  /** Takes `bytes` for a stream holding `streamHeld`, or names the budget that refuses them. */
  take(client: string, streamHeld: number, bytes: number): StreamBudgetName | undefined {
    if (streamHeld > 0 && streamHeld + bytes > this.config.maxFrameBytes) return 'stream';
    if (this.heldBy(client) + bytes > this.config.maxStreamBufferBytesPerClient) return 'client';
    if (this.total + bytes > this.config.maxStreamBufferBytes) return 'relay';
    this.charge(client, bytes);
    return undefined;
  }

  /** Counts `bytes` of an answer, whatever the budgets say: an answer is never dropped. */
  charge(client: string, bytes: number): void {
    this.byClient.set(client, (this.byClient.get(client) ?? 0) + bytes);
    this.total += bytes;
  }

  /** The budget `client` has used up, if any: its next request is refused until it reads. */
  exhausted(client: string): StreamBudgetName | undefined {
    if (this.heldBy(client) >= this.config.maxStreamBufferBytesPerClient) return 'client';
    if (this.total >= this.config.maxStreamBufferBytes) return 'relay';
    return undefined;
  }

  release(client: string, bytes: number): void {
    const held = (this.byClient.get(client) ?? 0) - bytes;
    if (held > 0) this.byClient.set(client, held);
    else this.byClient.delete(client);
    this.total -= bytes;
  }

  heldBy(client: string): number {
    return this.byClient.get(client) ?? 0;
  }

  get held(): number {
    return this.total;
  }
}
