// Claude Code's and MetaMCP's choice: LLM APIs take only `A-Z a-z 0-9 _ -` in function names, and
// one `-` or `_` is common inside names. Names split at the first `__` (see canPrefix).
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

export function splitName(name: string): { server: string; tool: string } | undefined {
  const at = name.indexOf(TOOL_NAME_SEPARATOR);
  if (at <= 0) return undefined;
  const server = name.slice(0, at);
  const tool = name.slice(at + TOOL_NAME_SEPARATOR.length);
  return canPrefix(server) && tool !== '' ? { server, tool } : undefined;
}
