import type { z } from 'zod';

/**
 * The three listeners of one process (API or relay, health, metrics) need three ports: the same
 * number twice fails at listen with EADDRINUSE, after the app was built. Adds one issue per
 * clash, on the later variable, naming both; values that are not numbers (already reported as
 * invalid) are skipped, and so are 0s: each listener then gets its own free port. Shared by the service's and the relay server's schemas.
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
