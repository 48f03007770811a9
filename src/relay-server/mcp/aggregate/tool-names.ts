/**
 * Tool names on the agent's aggregate endpoint: `<server>__<tool>`, e.g. `github__search_issues`.
 *
 * Why `__`: MCP (2025-11-25, "Tool names") asks for 1 to 128 of `A-Z a-z 0-9 _ - .`, and
 * several LLM APIs accept only `A-Z a-z 0-9 _ -` in function names, so `/`, `:` or `.` would
 * break clients that pass names to a model; `-` and a single `_` are common inside names. `__`
 * is what Claude Code (`mcp__<server>__<tool>`), MetaMCP and LiteLLM's suggested default use.
 *
 * Why it cannot collide: a name splits at its FIRST `__`, and only servers whose name contains
 * no `__` and does not end in `_` are offered (MetaMCP broke on servers named `a__b`). The
 * first `__` of `<server>__<tool>` is then exactly after the server name, whatever the tool's
 * name holds, so every prefixed name maps back to one server and one tool.
 */
export const TOOL_NAME_SEPARATOR = '__';

/** The spec's upper bound for a tool name (a SHOULD; longer names are left out, not cut). */
export const MAX_TOOL_NAME_LENGTH = 128;

/** Whether `server`'s tools can be offered under prefixed names that split back unambiguously. */
export function canPrefix(server: string): boolean {
  return server !== '' && !server.includes(TOOL_NAME_SEPARATOR) && !server.endsWith('_');
}

/** `<server>__<tool>`, or undefined when the server cannot be prefixed or the name is too long. */
export function prefixedName(server: string, tool: string): string | undefined {
  if (!canPrefix(server) || tool === '') return undefined;
  const name = `${server}${TOOL_NAME_SEPARATOR}${tool}`;
  return name.length <= MAX_TOOL_NAME_LENGTH ? name : undefined;
}

/** The server and tool a prefixed name stands for; undefined when it is not one of ours. */
export function splitName(name: string): { server: string; tool: string } | undefined {
  const at = name.indexOf(TOOL_NAME_SEPARATOR);
  if (at <= 0) return undefined;
  const server = name.slice(0, at);
  const tool = name.slice(at + TOOL_NAME_SEPARATOR.length);
  return canPrefix(server) && tool !== '' ? { server, tool } : undefined;
}
