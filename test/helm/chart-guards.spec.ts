/**
 * Settings the chart refuses, with a message that says what to change: the "latest" tag (the
 * seed asks for version tags), several pods sharing the embedded SQLite store, a half-configured
 * agent, and values the schema does not know.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { helmMissing, render, renderError, skipWhenMissing } from './helm-tools.js';

const embedded = { 'postgresql.enabled': false };

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart guards${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
    });

    it.each(['latest', 'LATEST'])('refuses image.tag=%s', (tag) => {
      expect(renderError({ set: { 'image.tag': tag } })).toContain(
        'image.tag "latest" is not allowed; set image.tag to a release version',
      );
    });

    const shared: [string, Record<string, string | number | boolean>][] = [
      ['2 fixed replicas', { ...embedded, 'autoscaling.enabled': false, replicaCount: 2 }],
      ['the autoscaler', { ...embedded, 'autoscaling.enabled': true }],
    ];
    it.each(shared)('refuses the embedded store shared by %s', (_case, set) => {
      expect(renderError({ set })).toContain(
        'the embedded SQLite store (postgresql.enabled=false and no database.url or database.existingSecret) cannot be shared by several replicas',
      );
    });

    it('accepts the embedded store with one replica, and several with a database', () => {
      const single = { ...embedded, 'autoscaling.enabled': false, replicaCount: 1 };
      expect(render({ set: single }).length).toBeGreaterThan(0);
      const external = { ...embedded, 'database.url': 'postgres://u:p@db:5432/plants' };
      expect(render({ set: external }).length).toBeGreaterThan(0);
    });

    it('refuses an external database while the bundled one is on', () => {
      expect(renderError({ set: { 'database.url': 'postgres://u:p@db:5432/plants' } })).toContain(
        'set postgresql.enabled=false',
      );
    });

    it('refuses an agent URL without a token, and a token without a URL', () => {
      expect(renderError({ set: { 'agent.serverUrl': 'https://agents.example.com' } })).toContain(
        'agent.serverUrl is set without agent.token or agent.existingSecret',
      );
      expect(renderError({ set: { 'agent.token': 'secret-agent-token' } })).toContain(
        'set without agent.serverUrl',
      );
    });

    it('refuses values the schema does not know or allow', () => {
      expect(renderError({ set: { replicas: 3 } })).toContain(
        "additional properties 'replicas' not allowed",
      );
      expect(renderError({ set: { 'agent.logLevel': 'loud' } })).toContain('/agent/logLevel');
      expect(renderError({ set: { 'agent.serverUrl': 'http://plain.example.com' } })).toContain(
        '/agent/serverUrl',
      );
      expect(renderError({ set: { 'auth.apiTokens[0]': 'short' } })).toContain('/auth/apiTokens/0');
      expect(renderError({ set: { 'corsOrigins[0]': 'https://docs.example.com/path' } })).toContain(
        '/corsOrigins/0',
      );
      expect(renderError({ set: { 'webhook.urls[0]': 'https://hooks.example.com/p' } })).toContain(
        'webhook.urls is set without webhook.secrets',
      );
    });

    it('refuses Kubernetes older than 1.19', () => {
      expect(renderError({ kubeVersion: '1.18.0' })).toContain(
        'chart requires kubeVersion: >=1.19.0-0',
      );
    });

    it('refuses equal ports', () => {
      expect(renderError({ set: { 'ports.health': 3000 } })).toContain('must differ');
    });
  },
);
