import { z } from 'zod';

/**
 * `mcp-servers.json`, as the seed defines it: `{"mcpServers": {"<name>": {command, args?, env?}}}`.
 * Unknown keys are errors (`strictObject`): a typo such as `"arg"` must not pass silently.
 */
export const MCP_SERVER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export const mcpServerEntrySchema = z.strictObject({
  command: z.string({ error: 'must be a string' }).min(1, 'must not be empty'),
  args: z
    .array(z.string({ error: 'must be a string' }), { error: 'must be an array of strings' })
    .optional(),
  env: z
    .record(z.string(), z.string({ error: 'must be a string' }), {
      error: 'must be an object of strings',
    })
    .optional(),
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
export type McpServerEntry = z.infer<typeof mcpServerEntrySchema>;

/** One MCP server, ready to start: `${VAR}` references already expanded. */
export interface McpServerSpec {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}
