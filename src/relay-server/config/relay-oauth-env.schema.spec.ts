import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../config/shared/config-error.js';
import { loadRelayConfig } from './load-relay-config.js';

const entry = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex')}`;
const agentsOnly = { RELAY_AGENTS: JSON.stringify({ shop: entry('a'.repeat(40)) }) };
const oauth = {
  ...agentsOnly,
  RELAY_OAUTH_ISSUER: 'https://idp.example.com/realms/plants',
  RELAY_PUBLIC_URL: 'https://relay.example.com/relay/',
};

function problems(env: Record<string, string>): string {
  try {
    loadRelayConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join('\n');
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the relay OAuth settings', () => {
  it('derive the resource and its metadata URL from RELAY_PUBLIC_URL, with defaults', () => {
    const config = loadRelayConfig(oauth);
    expect(config.clients).toEqual([]);
    expect(config.oauth).toEqual({
      issuer: 'https://idp.example.com/realms/plants',
      resource: 'https://relay.example.com/relay',
      metadataUrl: 'https://relay.example.com/.well-known/oauth-protected-resource/relay',
      scopePrefix: 'mcp:agent:',
      agentsClaim: undefined,
      clockSkewSeconds: 30,
      jwksRefreshMs: 30_000,
      fetchTimeoutMs: 5_000,
      maxDocumentBytes: 1_048_576,
      requireAtJwtTyp: true,
    });
  });

  it('are off without an issuer', () => {
    const config = loadRelayConfig({
      ...agentsOnly,
      RELAY_CLIENTS: JSON.stringify({ a: { tokens: entry('c'.repeat(40)), agents: ['shop'] } }),
    });
    expect(config.oauth).toBeUndefined();
  });

  it('accept plain http only on a loopback host', () => {
    const local = {
      RELAY_OAUTH_ISSUER: 'http://127.0.0.1:9000',
      RELAY_PUBLIC_URL: 'http://localhost:8443',
    };
    expect(loadRelayConfig({ ...oauth, ...local }).oauth?.resource).toBe('http://localhost:8443');
  });

  it('let an operator accept tokens without typ at+jwt', () => {
    const config = loadRelayConfig({ ...oauth, RELAY_OAUTH_REQUIRE_AT_JWT_TYP: 'false' });
    expect(config.oauth?.requireAtJwtTyp).toBe(false);
  });

  it.each([
    [agentsOnly, 'RELAY_CLIENTS is required unless RELAY_OAUTH_ISSUER is set'],
    [
      { ...oauth, RELAY_PUBLIC_URL: '' },
      'RELAY_PUBLIC_URL is required when RELAY_OAUTH_ISSUER is set',
    ],
    [
      { ...oauth, RELAY_OAUTH_ISSUER: 'http://idp.example.com' },
      'RELAY_OAUTH_ISSUER must be an absolute https:// URL',
    ],
    [
      { ...oauth, RELAY_PUBLIC_URL: 'https://relay.example.com/?x=1' },
      'RELAY_PUBLIC_URL must be an absolute https:// URL',
    ],
    [
      { ...oauth, RELAY_OAUTH_AGENT_SCOPE_PREFIX: 'mcp agent' },
      'RELAY_OAUTH_AGENT_SCOPE_PREFIX must be',
    ],
    [
      { ...oauth, RELAY_OAUTH_CLOCK_SKEW_SECONDS: '301' },
      'RELAY_OAUTH_CLOCK_SKEW_SECONDS must be a whole number from 0 to 300',
    ],
    [
      { ...oauth, RELAY_OAUTH_JWKS_REFRESH_SECONDS: '0' },
      'RELAY_OAUTH_JWKS_REFRESH_SECONDS must be a whole number from 1 to 3600',
    ],
    [
      { ...oauth, RELAY_OAUTH_MAX_DOCUMENT_BYTES: '100' },
      'RELAY_OAUTH_MAX_DOCUMENT_BYTES must be a whole number from 1024 to 67108864',
    ],
    [
      { ...oauth, RELAY_OAUTH_REQUIRE_AT_JWT_TYP: 'no' },
      'RELAY_OAUTH_REQUIRE_AT_JWT_TYP must be true or false',
    ],
  ])('reports %j as %s', (env, message) => {
    expect(problems(env)).toContain(message);
  });
});
