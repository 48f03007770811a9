import { TokenBucket } from '../../common/logging/token-bucket.js';

import type { RelayConfig } from '../config/relay-config.js';

/** What one agent connection may send (0 turns a rate off); every budget holds one frame. */
type AgentFrameRates = RelayConfig['agentRates'] & { maxFrameBytes: number };

/** `unasked`: the bytes of a frame that answers nothing the relay asked. */
type FrameRate = 'frames' | 'unasked' | 'inventory';

/** Frames and bytes may come in bursts of this many seconds' worth. */
const BURST_SECONDS = 4;

// Token buckets, so a flooding pod costs a bounded share of CPU. Every frame counts, its bytes too
// unless it answers a relay request (in-flight caps bound those); past a rate, the caller drops it.
export class FrameRateLimit {
  private readonly limits = new Map<FrameRate, { bucket: TokenBucket; over: string }>();

  constructor(rates: AgentFrameRates, now?: () => number) {
    const limit = (rate: FrameRate, ratePerSecond: number, burst: number, over: string) => {
      if (ratePerSecond <= 0) return;
      this.limits.set(rate, { bucket: new TokenBucket({ ratePerSecond, burst, now }), over });
    };
    const { framesPerSecond: frames, bytesPerSecond: bytes, maxFrameBytes } = rates;
    const inventory = rates.inventoryBytesPerMinute;
    limit('frames', frames, frames * BURST_SECONDS, `more than ${frames} frames a second`);
    const bytesBurst = Math.max(bytes * BURST_SECONDS, maxFrameBytes);
    limit('unasked', bytes, bytesBurst, `more than ${bytes} bytes a second`);
    const inventoryBurst = Math.max(inventory, maxFrameBytes);
    limit(
      'inventory',
      inventory / 60,
      inventoryBurst,
      `more than ${inventory} bytes of inventory a minute`,
    );
  }

  /** Charges `amount` (a frame, or bytes) to `rate`; the rate it breaks, if any. */
  take(rate: FrameRate, amount = 1): string | undefined {
    const limit = this.limits.get(rate);
    return limit && !limit.bucket.take(amount) ? limit.over : undefined;
  }
}
