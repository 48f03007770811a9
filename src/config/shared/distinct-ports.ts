import type { z } from 'zod';

/**
 * One process's three listeners need three ports (the same twice fails late, at listen): an
 * issue per clash on the later variable. Invalid values and 0s (any free port) are skipped.
 */
export function requireDistinctPorts(
  ctx: z.RefinementCtx,
  ports: readonly (readonly [name: string, value: unknown])[],
): void {
  for (const [i, [name, value]] of ports.entries()) {
    if (typeof value !== 'number' || value === 0) continue;
    const clash = ports.slice(0, i).find(([, other]) => other === value);
    if (clash) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `${name} must differ from ${clash[0]} (both are ${value})`,
      });
    }
  }
}
