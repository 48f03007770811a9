import { describe, expect, it } from 'vitest';
import { buildChildEnv } from './child-env.js';

const parent = {
  PATH: '/usr/bin',
  HOME: '/home/agent',
  LANG: 'C.UTF-8',
  TZ: 'UTC',
  NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
  HTTPS_PROXY: 'http://proxy:3128',
  no_proxy: 'localhost',
  SERVICE_AGENT_TOKEN: 'agent-secret',
  API_TOKENS: 'api-secret',
  DATABASE_URL: 'postgres://u:p@db/plants',
  PGPASSWORD: 'db-secret',
  SOMETHING_ELSE: 'x',
  UNSET: undefined,
};

describe('buildChildEnv', () => {
  it('passes the safe base, proxy and CA variables, and nothing else', () => {
    expect(buildChildEnv(parent, {})).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/agent',
      LANG: 'C.UTF-8',
      TZ: 'UTC',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
      HTTPS_PROXY: 'http://proxy:3128',
      no_proxy: 'localhost',
    });
  });

  it.each(['SERVICE_AGENT_TOKEN', 'API_TOKENS', 'DATABASE_URL', 'PGPASSWORD'])(
    'never passes %s on its own',
    (name) => {
      expect(buildChildEnv(parent, {})).not.toHaveProperty(name);
    },
  );

  it('passes a secret when the entry names it, and the entry wins over the base', () => {
    const env = buildChildEnv(parent, { DATABASE_URL: 'postgres://other', HOME: '/srv' });
    expect(env.DATABASE_URL).toBe('postgres://other');
    expect(env.HOME).toBe('/srv');
  });

  it('skips exported shell functions', () => {
    expect(buildChildEnv({ PATH: '() { :; }; echo pwned' }, {})).toEqual({});
  });
});
