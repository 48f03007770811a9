import { TokenBucket } from '../../common/logging/token-bucket.js';

import type { RelayConfig } from '../config/relay-config.js';

/** What one agent connection may send (0 turns a rate off); every budget holds one frame. */
type AgentFrameRates = RelayConfig['agentRates'] & { maxFrameBytes: number };

/** Frames and bytes may come in bursts of this many seconds' worth. */
const BURST_SECONDS = 4;

/**
 * Token buckets over what one agent connection sends, so a flooding pod costs a bounded share of
 * CPU. Every frame counts; its bytes too unless it answers the relay's request (bounded by the
 * in-flight caps). Over a rate, the reason comes back and the caller closes the connection.
 */
export class FrameRateLimit {
  private readonly frames: TokenBucket | undefined;
  private readonly bytes: TokenBucket | undefined;
  private readonly inventories: TokenBucket | undefined;

  constructor(
    private readonly rates: AgentFrameRates,
    now?: () => number,
  ) {
    const bucket = (ratePerSecond: number, burst: number) =>
      ratePerSecond > 0 ? new TokenBucket({ ratePerSecond, burst, now }) : undefined;
    this.frames = bucket(rates.framesPerSecond, rates.framesPerSecond * BURST_SECONDS);
    this.bytes = bucket(
      rates.bytesPerSecond,
      Math.max(rates.bytesPerSecond * BURST_SECONDS, rates.maxFrameBytes),
    );
    this.inventories = bucket(
      rates.inventoryBytesPerMinute / 60,
      Math.max(rates.inventoryBytesPerMinute, rates.maxFrameBytes),
    );
  }

  frame(): string | undefined {
    if (this.frames && !this.frames.take()) {
      return `more than ${this.rates.framesPerSecond} frames a second`;
    }
    return undefined;
  }

  /** Charges the bytes of a frame that answers nothing the relay asked; the rate it breaks. */
  unasked(bytes: number): string | undefined {
    if (this.bytes && !this.bytes.take(bytes)) {
      return `more than ${this.rates.bytesPerSecond} bytes a second`;
    }
    return undefined;
  }

  inventory(bytes: number): string | undefined {
    if (this.inventories && !this.inventories.take(bytes)) {
      return `more than ${this.rates.inventoryBytesPerMinute} bytes of inventory a minute`;
    }
    return undefined;
  }
}
