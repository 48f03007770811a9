import { describe, expect, it } from 'vitest';
import { FrameRateLimit } from './frame-rate-limit.js';

const MiB = 1024 * 1024;

describe('FrameRateLimit', () => {
  it('takes a burst of 4 seconds of frames, then the rate', () => {
    let now = 0;
    const limit = new FrameRateLimit(
      { framesPerSecond: 10, bytesPerSecond: 0, inventoryBytesPerMinute: 0, maxFrameBytes: MiB },
      () => now,
    );
    for (let i = 0; i < 40; i++) expect(limit.take('frames')).toBeUndefined();
    expect(limit.take('frames')).toBe('more than 10 frames a second');
    now += 1_000;
    for (let i = 0; i < 10; i++) expect(limit.take('frames')).toBeUndefined();
    expect(limit.take('frames')).toBeDefined();
  });

  it('lets one frame of the largest size through even when the byte rate is lower', () => {
    // A clock that stands still: a real one refills a byte every millisecond between the calls.
    const limit = new FrameRateLimit(
      {
        framesPerSecond: 0,
        bytesPerSecond: 1024,
        inventoryBytesPerMinute: 0,
        maxFrameBytes: 4 * MiB,
      },
      () => 0,
    );
    expect(limit.take('unasked', 4 * MiB)).toBeUndefined();
    expect(limit.take('unasked', 1)).toBe('more than 1024 bytes a second');
  });

  it('holds inventories to their own per-minute budget', () => {
    let now = 0;
    const limit = new FrameRateLimit(
      {
        framesPerSecond: 0,
        bytesPerSecond: 0,
        inventoryBytesPerMinute: 8 * MiB,
        maxFrameBytes: 4 * MiB,
      },
      () => now,
    );
    expect(limit.take('inventory', 4 * MiB)).toBeUndefined();
    expect(limit.take('inventory', 4 * MiB)).toBeUndefined();
    expect(limit.take('inventory', 4 * MiB)).toContain('bytes of inventory a minute');
    now += 30_000;
    expect(limit.take('inventory', 4 * MiB)).toBeUndefined();
  });
});
