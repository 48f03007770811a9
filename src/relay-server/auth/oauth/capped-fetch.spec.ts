import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestCa } from '../../../../test/fixtures/agent-server/test-ca.js';
import { cappedFetch } from './capped-fetch.js';

const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  vi.unstubAllEnvs();
  for (const server of servers.splice(0)) server.close();
});

/** An IdP whose certificate no CA of this process trusts. */
async function untrustedIssuer(): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer(createTestCa(), (_request, response) => {
    hits++;
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `https://127.0.0.1:${port}/.well-known/openid-configuration`, hits: () => hits };
}

describe('cappedFetch', () => {
  it.each([
    ['', undefined],
    [', even with NODE_TLS_REJECT_UNAUTHORIZED=0', '0'],
  ])('refuses an IdP whose certificate does not verify%s', async (_, rejectUnauthorized) => {
    if (rejectUnauthorized !== undefined) {
      vi.stubEnv('NODE_TLS_REJECT_UNAUTHORIZED', rejectUnauthorized);
    }
    const issuer = await untrustedIssuer();
    await expect(cappedFetch(issuer.url, {}, 1024)).rejects.toMatchObject({
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    });
    expect(issuer.hits()).toBe(0);
  });
});
