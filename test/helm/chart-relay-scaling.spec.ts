/**
 * The relay pod's size and its autoscaler (relayServer.resources, relayServer.autoscaling): the
 * defaults the chart README's arithmetic gives, an HPA on CPU that scales in slowly, only with
 * Redis, and the Deployment and disruption budget that go with it. helm lint and kubeconform
 * cover ci/relay-server-autoscaling-values.yaml (chart-schemas.spec.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Deployment,
  helmMissing,
  type Manifest,
  minimalRelay as minimal,
  render,
  renderError,
  skipWhenMissing,
} from './helm-tools.js';

const RELAY = 'plants-plant-store-relay';
const autoscaled = {
  ...minimal,
  'relayServer.redis.url': 'redis://redis.data:6379/0',
  'relayServer.autoscaling.enabled': true,
};

const named = (docs: Manifest[], kind: string) =>
  docs.filter((doc) => doc.kind === kind && doc.metadata.name === RELAY);
const relayOf = (docs: Manifest[]) => named(docs, 'Deployment')[0] as Deployment;

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart relay scaling${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    let plain: Manifest[];
    let scaled: Manifest[];
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
      plain = render({ set: minimal });
      scaled = render({ set: autoscaled });
    });

    it('sizes the pod for 2,048 agents and leaves RELAY_MAX_CONNECTIONS at its default', () => {
      const container = relayOf(plain).spec.template.spec.containers[0]!;
      expect(container.resources).toEqual({
        requests: { cpu: '250m', memory: '224Mi' },
        limits: { cpu: '1', memory: '512Mi' },
      });
      expect(named(plain, 'ConfigMap')[0]!.data).not.toHaveProperty('RELAY_MAX_CONNECTIONS');
    });

    it('adds no relay autoscaler by default', () => {
      expect(named(plain, 'HorizontalPodAutoscaler')).toEqual([]);
      expect(relayOf(plain).spec.replicas).toBe(1);
    });

    it('scales the relay Deployment on CPU, and in one pod per 5 minutes after 10', () => {
      const hpa = named(scaled, 'HorizontalPodAutoscaler')[0]!;
      expect(hpa.apiVersion).toBe('autoscaling/v2');
      expect(hpa.spec).toEqual({
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: RELAY },
        minReplicas: 2,
        maxReplicas: 10,
        metrics: [
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 100 } },
          },
        ],
        behavior: {
          scaleDown: {
            stabilizationWindowSeconds: 600,
            policies: [{ type: 'Pods', value: 1, periodSeconds: 300 }],
          },
        },
      });
      const old = render({ set: autoscaled, kubeVersion: '1.19.0' });
      expect(named(old, 'HorizontalPodAutoscaler')[0]!.apiVersion).toBe('autoscaling/v2beta2');
    });

    it('takes the bounds and target from the values', () => {
      const tuned = render({
        set: {
          ...autoscaled,
          'relayServer.autoscaling.minReplicas': 3,
          'relayServer.autoscaling.maxReplicas': 8,
          'relayServer.autoscaling.targetCPUUtilizationPercentage': 80,
        },
      });
      expect(named(tuned, 'HorizontalPodAutoscaler')[0]!.spec).toMatchObject({
        minReplicas: 3,
        maxReplicas: 8,
        metrics: [{ resource: { target: { averageUtilization: 80 } } }],
      });
    });

    it('leaves the replica count to the autoscaler and spreads the pods', () => {
      const relay = relayOf(scaled);
      expect(relay.spec).not.toHaveProperty('replicas');
      expect(relay.spec.strategy.type).toBe('RollingUpdate');
      expect(relay.spec.template.spec.topologySpreadConstraints).toHaveLength(1);
    });

    it('refuses autoscaling without Redis, in a sentence saying why', () => {
      const withoutRedis = { ...autoscaled, 'relayServer.redis.url': '' };
      expect(renderError({ set: withoutRedis })).toContain(
        'relayServer.autoscaling.enabled needs Redis (relayServer.redis.url or ' +
          'relayServer.redis.existingSecret), because the replicas it adds would each keep ' +
          'their own agent connections and sessions in memory',
      );
    });

    it('keeps the disruption budget while the autoscaler keeps more than one pod', () => {
      expect(named(scaled, 'PodDisruptionBudget')[0]!.spec).toMatchObject({ minAvailable: 1 });
      const floorOfOne = render({
        set: { ...autoscaled, 'relayServer.autoscaling.minReplicas': 1 },
      });
      expect(named(floorOfOne, 'PodDisruptionBudget')).toEqual([]);
      // relayServer.replicas is unused then: it neither adds nor removes the budget.
      const many = { ...autoscaled, 'relayServer.replicas': 3 };
      const floorOfOneOfMany = render({
        set: { ...many, 'relayServer.autoscaling.minReplicas': 1 },
      });
      expect(named(floorOfOneOfMany, 'PodDisruptionBudget')).toEqual([]);
    });

    it('refuses bounds the schema does not allow', () => {
      expect(
        renderError({ set: { ...autoscaled, 'relayServer.autoscaling.minReplicas': 0 } }),
      ).toContain('/relayServer/autoscaling/minReplicas');
    });
  },
);
