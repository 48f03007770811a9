/**
 * The chart on a database it does not deploy, whose URL lives in a Secret someone else writes:
 * CloudNativePG writes `<cluster>-app` with the `-rw` Service's URL under the key `uri`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  allOfKind,
  appContainer,
  type Container,
  type Deployment,
  envOf,
  helmMissing,
  type Manifest,
  oneOfKind,
  render,
  skipWhenMissing,
} from './helm-tools.js';

const cloudNativePg = {
  'postgresql.enabled': false,
  'database.existingSecret': 'plants-db-app',
  'database.existingSecretKey': 'uri',
};

/** The first container of every Deployment: the API's and, when on, the worker's. */
const containersOf = (docs: Manifest[]): Container[] =>
  allOfKind<Deployment>(docs, 'Deployment').map((d) => d.spec.template.spec.containers[0]!);

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart database Secret${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
    });

    it("reads DATABASE_URL from the key `uri` of CloudNativePG's app Secret, in every pod", () => {
      const docs = render({ set: { ...cloudNativePg, 'webhook.worker.enabled': true } });
      const containers = containersOf(docs);
      expect(containers.map((c) => c.name).sort()).toEqual(['plant-store', 'webhook-worker']);
      for (const container of containers) {
        expect(envOf(container, 'DATABASE_URL')).toEqual({
          name: 'DATABASE_URL',
          valueFrom: { secretKeyRef: { name: 'plants-db-app', key: 'uri' } },
        });
        expect(envOf(container, 'PGPASSWORD')).toBeUndefined();
      }
      // No bundled server, and no copy of the URL in the chart's own Secret.
      expect(allOfKind(docs, 'StatefulSet')).toEqual([]);
      for (const secret of allOfKind(docs, 'Secret')) {
        expect(Object.keys(secret.data ?? {})).not.toContain('database-url');
      }
    });

    it('takes the key `database-url` when database.existingSecretKey is not set', () => {
      const docs = render({
        set: { 'postgresql.enabled': false, 'database.existingSecret': 'plants-db' },
      });
      const api = appContainer(oneOfKind<Deployment>(docs, 'Deployment'));
      expect(envOf(api, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
        name: 'plants-db',
        key: 'database-url',
      });
    });
  },
);
