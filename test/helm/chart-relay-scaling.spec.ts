/**
 * The relay pod's size (relayServer.resources): the defaults the chart README's arithmetic
 * gives for the relay's default connection cap.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Deployment,
  helmMissing,
  type Manifest,
  minimalRelay as minimal,
  render,
  skipWhenMissing,
} from './helm-tools.js';

const RELAY = 'plants-plant-store-relay';

const named = (docs: Manifest[], kind: string) =>
  docs.filter((doc) => doc.kind === kind && doc.metadata.name === RELAY);
const relayOf = (docs: Manifest[]) => named(docs, 'Deployment')[0] as Deployment;

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart relay scaling${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    let plain: Manifest[];
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
      plain = render({ set: minimal });
    });

    it('sizes the pod for 2,048 agents and leaves RELAY_MAX_CONNECTIONS at its default', () => {
      const container = relayOf(plain).spec.template.spec.containers[0]!;
      expect(container.resources).toEqual({
        requests: { cpu: '250m', memory: '224Mi' },
        limits: { cpu: '500m', memory: '512Mi' },
      });
      expect(named(plain, 'ConfigMap')[0]!.data).not.toHaveProperty('RELAY_MAX_CONNECTIONS');
    });
  },
);
