/**
 * Frames to text and back within the protocol's limits, never throwing: JSON.stringify throws
 * on a value 6,000 deep (an MCP server's answer took the process down) and JSON.parse builds
 * one, so both ways check the size and the depth (iteratively) and say why they refuse.
 */
export const DEFAULT_FRAME_LIMITS = {
  /** Bytes of one frame's UTF-8 text, both directions. */
  maxFrameBytes: 4 * 1024 * 1024,
  /** Nesting of arrays and objects in one frame, the frame object itself being level 1. */
  maxDepth: 100,
};

export type FrameLimits = typeof DEFAULT_FRAME_LIMITS;

export type Encoded = { ok: true; text: string } | { ok: false; reason: string };

export type Decoded =
  | { ok: true; value: unknown }
  /** `value` is there when the text parsed but broke a limit (to answer the request's id). */
  | { ok: false; reason: string; value?: unknown };

export function encodeFrame(frame: unknown, limits: FrameLimits): Encoded {
  if (depthExceeds(frame, limits.maxDepth)) {
    return { ok: false, reason: `nested deeper than ${limits.maxDepth} levels` };
  }
  let text: string;
  try {
    text = JSON.stringify(frame);
  } catch (error) {
    // A BigInt or a cycle: not JSON, whatever produced it.
    return { ok: false, reason: `not encodable as JSON (${(error as Error).message})` };
  }
  const tooLarge = oversize(text, limits);
  return tooLarge ? { ok: false, reason: tooLarge } : { ok: true, text };
}

export function decodeFrame(text: string, limits: FrameLimits): Decoded {
  const tooLarge = oversize(text, limits);
  if (tooLarge) return { ok: false, reason: tooLarge };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'frame is not JSON' };
  }
  if (depthExceeds(value, limits.maxDepth)) {
    return { ok: false, reason: `nested deeper than ${limits.maxDepth} levels`, value };
  }
  return { ok: true, value };
}

function oversize(text: string, { maxFrameBytes }: FrameLimits): string | undefined {
  const bytes = Buffer.byteLength(text);
  return bytes > maxFrameBytes
    ? `${bytes} bytes, over the ${maxFrameBytes}-byte frame limit`
    : undefined;
}

/** Whether arrays and objects nest deeper than `maxDepth`; a loop, not recursion. */
export function depthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  const seen = new Set<object>();
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [node, depth] = item;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > maxDepth) return true;
    // A cycle is not deep, it is unencodable: JSON.stringify reports it.
    if (seen.has(node)) continue;
    seen.add(node);
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
