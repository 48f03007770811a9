/**
 * The relay's OAuth settings in the chart (relayServer.oauth): the environment they give is one
 * the relay's config loader accepts, the NetworkPolicy opens DNS and the issuer only then, and
 * an issuer without the public URL is refused.
 */
import { describe, expect, it } from 'vitest';
import { loadRelayConfig } from '../../src/relay-server/config/load-relay-config.js';
import {
  type Deployment,
  helmMissing,
  type Manifest,
  render,
  renderError,
  skipWhenMissing,
} from './helm-tools.js';

const RELAY = 'plants-plant-store-relay';
const named = (docs: Manifest[], kind: string) =>
  docs.find((doc) => doc.kind === kind && doc.metadata.name === RELAY)!;
const oauthOnly = {
  'relayServer.enabled': true,
  'relayServer.agents.shop[0]': `sha256:${'1'.repeat(64)}`,
  'relayServer.oauth.issuer': 'https://idp.example.com/realms/plants',
  'relayServer.oauth.publicUrl': 'https://relay.example.com',
  'relayServer.oauth.egressTo[0].ipBlock.cidr': '192.0.2.0/24',
};

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart relay OAuth${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    it('gives an environment with the issuer that the config loader accepts, without clients', () => {
      const docs = render({ set: oauthOnly });
      const environment: Record<string, string> = { ...named(docs, 'ConfigMap').data };
      const secret = named(docs, 'Secret');
      const container = (named(docs, 'Deployment') as Deployment).spec.template.spec.containers[0]!;
      for (const variable of container.env) {
        const ref = variable.valueFrom?.secretKeyRef;
        if (ref)
          environment[variable.name] = Buffer.from(secret.data![ref.key]!, 'base64').toString();
      }
      const config = loadRelayConfig(environment);
      expect(config.clients).toEqual([]);
      expect(config.oauth).toMatchObject({
        issuer: 'https://idp.example.com/realms/plants',
        resource: 'https://relay.example.com',
        scopePrefix: 'mcp:agent:',
        requireAtJwtTyp: true,
      });
      const lenient = render({ set: { ...oauthOnly, 'relayServer.oauth.requireAtJwtTyp': false } });
      expect(named(lenient, 'ConfigMap').data).toMatchObject({
        RELAY_OAUTH_REQUIRE_AT_JWT_TYP: 'false',
      });
    });

    it('opens DNS and the issuer for egress only with an issuer', () => {
      const egress = (docs: Manifest[]) =>
        (named(docs, 'NetworkPolicy').spec as { egress: unknown[] }).egress;
      expect(egress(render({ set: oauthOnly }))).toEqual([
        {
          ports: [
            { port: 53, protocol: 'UDP' },
            { port: 53, protocol: 'TCP' },
          ],
        },
        { ports: [{ port: 443, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '192.0.2.0/24' } }] },
      ]);
      const withoutIssuer = {
        ...oauthOnly,
        'relayServer.oauth.issuer': '',
        'relayServer.clients.a.tokens[0]': `sha256:${'2'.repeat(64)}`,
        'relayServer.clients.a.agents[0]': 'shop',
      };
      expect(egress(render({ set: withoutIssuer }))).toEqual([]);
    });

    it('refuses an issuer without the public URL', () => {
      expect(renderError({ set: { ...oauthOnly, 'relayServer.oauth.publicUrl': '' } })).toContain(
        'relayServer.oauth.issuer needs relayServer.oauth.publicUrl',
      );
    });
  },
);
