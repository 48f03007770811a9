/**
 * An MCP server's environment: a small safe base of the agent's, then the entry's `env`. The
 * agent's secrets reach a child only when an entry names them; the proxy and CA variables are
 * in the base, as servers behind a corporate proxy need them (the SDK's allowlist drops them).
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
    // Bash exported functions ("() { ...") are a Shellshock injection vector: the SDK skips them.
    if (value !== undefined && !value.startsWith('()')) env[key] = value;
  }
  return { ...env, ...entryEnv };
}
