/** An MCP request's span name and attributes (semantic conventions); never its arguments. */
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
