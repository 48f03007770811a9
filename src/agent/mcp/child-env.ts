/**
 * The environment of an MCP server child: a small safe base taken from the agent's own
 * environment, plus the entry's `env` from `mcp-servers.json`, which wins.
 *
 * Nothing else is inherited, so the agent's secrets (SERVICE_AGENT_TOKEN, API_TOKENS,
 * DATABASE_URL, ...) never reach a child unless an entry names them. The proxy and CA
 * variables are in the base because servers behind a corporate proxy cannot work without
 * them (the SDK's own allowlist drops them, modelcontextprotocol/typescript-sdk#92).
 */
export const INHERITED_ENV_VARS: readonly string[] = [
  'PATH',
  'HOME',
  'LANG',
  'TZ',
  'NODE_EXTRA_CA_CERTS',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
];

export function buildChildEnv(
  parent: Readonly<Record<string, string | undefined>>,
  entryEnv: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV_VARS) {
    const value = parent[key];
    // Bash exported functions ("() { ...") are a known injection vector (Shellshock); the SDK
    // skips them too.
    if (value !== undefined && !value.startsWith('()')) env[key] = value;
  }
  return { ...env, ...entryEnv };
}
