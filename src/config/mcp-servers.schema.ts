import { z } from 'zod';

/** `mcp-servers.json`; unknown keys are errors, so a typo such as `"arg"` cannot pass silently. */
const MCP_SERVER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Names every object already has (`__proto__`, `toString`...): a server named so vanished,
 * as assigning `__proto__` sets the prototype. They are refused with a clear error.
 */
const RESERVED_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

export const reservedNameMessage = (name: string): string =>
  `"${name}" cannot be a server name (every JavaScript object has a property of that name); choose another`;

/** The reserved names of the parsed file, checked before the schema: zod never sees `__proto__`. */
export function reservedServerNames(raw: unknown): string[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const servers: unknown = Object.hasOwn(raw, 'mcpServers')
    ? (raw as Record<string, unknown>).mcpServers
    : undefined;
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) return [];
  return Object.keys(servers).filter((name) => RESERVED_NAMES.has(name));
}

const mcpServerEntrySchema = z.strictObject({
  command: z.string({ error: 'must be a string' }).min(1, 'must not be empty'),
  args: z
    .array(z.string({ error: 'must be a string' }), { error: 'must be an array of strings' })
    .optional(),
  env: z
    .record(z.string(), z.string({ error: 'must be a string' }), {
      error: 'must be an object of strings',
    })
    .optional(),
  /** `per-client`: a process for each client that calls it, besides the one that lists tools. */
  instances: z
    .enum(['shared', 'per-client'], { error: 'must be "shared" or "per-client"' })
    .default('shared'),
  /** Per-client processes at once, at most; a further client's request gets an error. */
  maxInstances: z
    .int({ error: 'must be a whole number' })
    .min(1, 'must be at least 1')
    .max(100, 'must be at most 100')
    .default(3),
  /** A per-client process unused this long is stopped. */
  instanceIdleSeconds: z
    .int({ error: 'must be a whole number' })
    .min(10, 'must be at least 10')
    .max(86_400, 'must be at most 86400')
    .default(300),
});

export const mcpServersFileSchema = z.strictObject(
  {
    mcpServers: z.record(
      z.string().regex(MCP_SERVER_NAME, 'server names are 1 to 64 of A-Z a-z 0-9 _ . -'),
      mcpServerEntrySchema,
      {
        error: (issue) =>
          issue.code === 'invalid_type'
            ? 'must be an object mapping server names to server definitions'
            : undefined,
      },
    ),
  },
  { error: 'must be a JSON object with an "mcpServers" object' },
);

export type McpServersFile = z.infer<typeof mcpServersFileSchema>;

/** One MCP server, ready to start: `${VAR}` references already expanded. */
export type McpServerSpec = Required<McpServersFile['mcpServers'][string]> & { name: string };
