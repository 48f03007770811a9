/**
 * grafanaDashboards.*: the dashboards of helm/plant-store/dashboards/ shipped as ConfigMaps with
 * the Grafana sidecar's label, off by default, the relay server's only with the relay server.
 * Their queries are checked against the running processes in test/dashboards.e2e-spec.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  chartDir,
  helmMissing,
  type Manifest,
  namespace,
  render,
  renderError,
  skipWhenMissing,
} from './helm-tools.js';

const relayValues = path.join(chartDir, 'ci', 'relay-server-values.yaml');
const dashboardFile = (name: string): unknown =>
  JSON.parse(readFileSync(path.join(chartDir, 'dashboards', name), 'utf8'));
const dashboardsOf = (docs: Manifest[]) =>
  docs.filter((doc) => doc.kind === 'ConfigMap' && doc.metadata.name.endsWith('-dashboard'));

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart Grafana dashboards${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
    });

    it('renders none by default, with or without the relay server', () => {
      expect(dashboardsOf(render())).toEqual([]);
      expect(dashboardsOf(render({ values: [relayValues] }))).toEqual([]);
    });

    it("ships the service's dashboard with the sidecar's label, as the file holds it", () => {
      const [only, ...rest] = dashboardsOf(render({ set: { 'grafanaDashboards.enabled': true } }));
      expect(rest).toEqual([]);
      expect(only!.metadata).toMatchObject({
        name: 'plants-plant-store-dashboard',
        namespace,
        labels: { grafana_dashboard: '1', 'app.kubernetes.io/instance': 'plants' },
      });
      expect(only!.metadata.annotations).toBeUndefined();
      expect(Object.keys(only!.data!)).toEqual(['plant-store.json']);
      expect(JSON.parse(only!.data!['plant-store.json']!)).toEqual(
        dashboardFile('plant-store.json'),
      );
    });

    it("adds the relay server's dashboard when the relay server is deployed", () => {
      const docs = render({ values: [relayValues], set: { 'grafanaDashboards.enabled': true } });
      const relay = dashboardsOf(docs).find((d) => d.metadata.name.includes('relay'));
      expect(dashboardsOf(docs)).toHaveLength(2);
      expect(relay!.metadata.name).toBe('plants-plant-store-relay-dashboard');
      expect(JSON.parse(relay!.data!['relay-server.json']!)).toEqual(
        dashboardFile('relay-server.json'),
      );
    });

    it('takes the label, its value, the namespace, a folder and extra metadata from values', () => {
      const [only] = dashboardsOf(
        render({
          set: {
            'grafanaDashboards.enabled': true,
            'grafanaDashboards.label': 'grafana/dashboard',
            'grafanaDashboards.labelValue': 'plants',
            'grafanaDashboards.namespace': 'monitoring',
            'grafanaDashboards.folder': 'Plant Store',
            'grafanaDashboards.folderAnnotation': 'dashboards/folder',
            'grafanaDashboards.labels.team': 'garden',
            'grafanaDashboards.annotations.owner': 'ops',
          },
        }),
      );
      expect(only!.metadata.labels).toMatchObject({
        'grafana/dashboard': 'plants',
        team: 'garden',
      });
      expect(only!.metadata.labels).not.toHaveProperty('grafana_dashboard');
      expect(only!.metadata).toMatchObject({ namespace: 'monitoring' });
      expect(only!.metadata.annotations).toEqual({
        'dashboards/folder': 'Plant Store',
        owner: 'ops',
      });
    });

    it('refuses a label value that is not a string (the sidecar compares strings)', () => {
      const error = renderError({
        set: { 'grafanaDashboards.enabled': true, 'grafanaDashboards.labelValue': 1 },
      });
      expect(error).toMatch(/labelValue/);
    });
  },
);
