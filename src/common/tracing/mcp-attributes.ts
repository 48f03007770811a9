/**
 * The span name and attributes of one MCP request, per OpenTelemetry's MCP semantic
 * conventions: the method and, for a tool call, the tool's name. Never the arguments (they may
 * hold anything the user typed) and never a token.
 */
export function mcpSpan(message: { method?: unknown; params?: unknown }): {
  name: string;
  attributes: Record<string, string>;
} {
  const method = typeof message.method === 'string' ? message.method.slice(0, 128) : 'unknown';
  const attributes: Record<string, string> = { 'mcp.method.name': method };
  const params = message.params;
  const tool =
    method === 'tools/call' && typeof params === 'object' && params !== null
      ? (params as { name?: unknown }).name
      : undefined;
  if (typeof tool !== 'string') return { name: method, attributes };
  const name = tool.slice(0, 128);
  attributes['gen_ai.operation.name'] = 'execute_tool';
  attributes['gen_ai.tool.name'] = name;
  return { name: `${method} ${name}`, attributes };
}
