import { describe, expect, it } from 'vitest';
import { decodeFrame, depthExceeds, encodeFrame, type FrameLimits } from './frame-codec.js';

const LIMITS: FrameLimits = { maxFrameBytes: 64, maxDepth: 3 };

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { v: value };
  return value;
}

describe('frame codec', () => {
  it.each([
    [1, 1, false],
    [{}, 1, false],
    [nested(3), 3, false],
    [nested(4), 3, true],
    [nested(100_000), 100, true],
  ])('depthExceeds(%#) → %s', (value, max, expected) => {
    expect(depthExceeds(value, max)).toBe(expected);
  });

  it('encodes within the limits', () => {
    expect(encodeFrame({ a: [1] }, LIMITS)).toEqual({ ok: true, text: '{"a":[1]}' });
  });

  it.each([
    ['too deep', nested(4), 'nested deeper than 3 levels'],
    ['6,000 deep (JSON.stringify would throw)', nested(6_000), 'nested deeper than 3 levels'],
    ['too large', { a: 'x'.repeat(64) }, '72 bytes, over the 64-byte frame limit'],
    ['a BigInt', { a: 1n }, 'not encodable as JSON'],
  ])('refuses to encode a frame %s, without throwing', (_case, frame, reason) => {
    const encoded = encodeFrame(frame, LIMITS);
    expect(encoded.ok).toBe(false);
    expect(encoded).toMatchObject({ reason: expect.stringContaining(reason) as unknown });
  });

  it('refuses to encode a cycle without looping', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(encodeFrame(cycle, { maxFrameBytes: 64, maxDepth: 100 }).ok).toBe(false);
  });

  it.each([
    ['{"a":[1]}', { ok: true, value: { a: [1] } }],
    ['{"a":', { ok: false, reason: 'frame is not JSON' }],
    [`"${'x'.repeat(70)}"`, { ok: false, reason: '72 bytes, over the 64-byte frame limit' }],
    ['[[[[1]]]]', { ok: false, reason: 'nested deeper than 3 levels', value: [[[[1]]]] }],
  ])('decodes %s', (text, expected) => {
    expect(decodeFrame(text, LIMITS)).toEqual(expected);
  });
});
