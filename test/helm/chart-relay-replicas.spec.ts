/**
 * Several relay replicas in the chart (relayServer.replicas, relayServer.redis): what one
 * replica without Redis keeps as it was, and what Redis adds: the URL from a Secret, the
 * replica's own address from its pod IP, a rolling update, a disruption budget, spreading over
 * nodes, and a NetworkPolicy that lets the pods reach Redis and each other. helm lint and
 * kubeconform cover ci/relay-server-replicas-values.yaml (chart-schemas.spec.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRelayConfig } from '../../src/relay-server/config/load-relay-config.js';
import {
  type Container,
  type Deployment,
  envOf,
  helmMissing,
  type Manifest,
  render,
  renderError,
  skipWhenMissing,
  minimalRelay as minimal,
} from './helm-tools.js';

const RELAY = 'plants-plant-store-relay';
const REDIS_SECRET = `${RELAY}-redis`;
const relayPods = {
  matchLabels: {
    'app.kubernetes.io/name': 'plant-store',
    'app.kubernetes.io/instance': 'plants',
    'app.kubernetes.io/component': 'relay-server',
  },
};
const redisUrl = 'redis://:s3cret@redis.data:6379/0';
const threeWithRedis = { ...minimal, 'relayServer.replicas': 3, 'relayServer.redis.url': redisUrl };

interface PolicyRule {
  ports: { port: number; protocol: string }[];
  from?: unknown[];
  to?: unknown[];
}
interface PolicySpec {
  ingress: PolicyRule[];
  egress: PolicyRule[];
}

const named = (docs: Manifest[], kind: string, name: string) =>
  docs.filter((doc) => doc.kind === kind && doc.metadata.name === name);
const relayOf = (docs: Manifest[]) => named(docs, 'Deployment', RELAY)[0] as Deployment;
const relayContainer = (docs: Manifest[]): Container =>
  relayOf(docs).spec.template.spec.containers.find((c) => c.name === 'relay-server')!;
const policyOf = (docs: Manifest[]) =>
  named(docs, 'NetworkPolicy', RELAY)[0]!.spec as unknown as PolicySpec;
const rulesOnPort = (rules: PolicyRule[], port: number) =>
  rules.filter((rule) => rule.ports.some((p) => p.port === port));

type PodEnvVar = Container['env'][number] & { valueFrom?: { fieldRef?: { fieldPath: string } } };

/**
 * The relay pod's environment as the kubelet makes it: ConfigMap, Secret keys, the pod IP
 * (10.1.2.3 here) and $(VAR) references to variables defined before.
 */
function podEnvironment(docs: Manifest[]): Record<string, string> {
  const environment: Record<string, string> = { ...named(docs, 'ConfigMap', RELAY)[0]!.data };
  for (const variable of relayContainer(docs).env as PodEnvVar[]) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      const secret = named(docs, 'Secret', ref.name)[0]!;
      environment[variable.name] = Buffer.from(secret.data![ref.key]!, 'base64').toString();
    } else if (variable.valueFrom?.fieldRef?.fieldPath === 'status.podIP') {
      environment[variable.name] = '10.1.2.3';
    } else if (variable.value !== undefined) {
      environment[variable.name] = variable.value.replace(
        /\$\((\w+)\)/g,
        (whole, name: string) => environment[name] ?? whole,
      );
    }
  }
  return environment;
}

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart relay replicas${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    let one: Manifest[];
    let three: Manifest[];
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
      one = render({ set: minimal });
      three = render({ set: threeWithRedis });
    });

    it('refuses more than one replica without Redis, in a sentence saying why', () => {
      const message = renderError({ set: { ...minimal, 'relayServer.replicas': 2 } });
      expect(message).toContain(
        'relayServer.replicas greater than 1 needs Redis (relayServer.redis.url or ' +
          'relayServer.redis.existingSecret), because without it each replica keeps its own ' +
          'agent connections and sessions in memory',
      );
      expect(relayOf(three).spec.replicas).toBe(3);
    });

    it('keeps one replica without Redis as it was: Recreate, no budget, no spread, no peers', () => {
      const relay = relayOf(one);
      expect(relay.spec.replicas).toBe(1);
      expect(relay.spec.strategy).toEqual({ type: 'Recreate' });
      expect(named(one, 'PodDisruptionBudget', RELAY)).toEqual([]);
      expect(named(one, 'Secret', REDIS_SECRET)).toEqual([]);
      expect(relay.spec.template.spec).not.toHaveProperty('topologySpreadConstraints');
      const names = relayContainer(one).env.map((e) => e.name);
      expect(names).not.toContain('RELAY_REDIS_URL');
      expect(names).not.toContain('RELAY_REPLICA_URL');
      expect(policyOf(one).egress).toEqual([]);
    });

    it('takes RELAY_REDIS_URL from a Secret of its own, never from the ConfigMap', () => {
      const ref = envOf(relayContainer(three), 'RELAY_REDIS_URL')?.valueFrom?.secretKeyRef;
      expect(ref).toEqual({ name: REDIS_SECRET, key: 'redis-url' });
      const secret = named(three, 'Secret', REDIS_SECRET)[0]!;
      expect(Buffer.from(secret.data!['redis-url']!, 'base64').toString()).toBe(redisUrl);
      const configMap = named(three, 'ConfigMap', RELAY)[0]!;
      expect(JSON.stringify(configMap.data)).not.toContain('s3cret');
      // A changed URL rolls the pods, as a changed agent or client does.
      const other = render({ set: { ...threeWithRedis, 'relayServer.redis.url': 'redis://r:1' } });
      const checksum = (docs: Manifest[]) =>
        relayOf(docs).spec.template.metadata.annotations['checksum/config'];
      expect(checksum(other)).not.toBe(checksum(three));
    });

    it('takes RELAY_REDIS_URL from an existing Secret and key, beside existing agents', () => {
      const docs = render({
        set: {
          'relayServer.enabled': true,
          'relayServer.existingSecret': 'my-relay',
          'relayServer.replicas': 2,
          'relayServer.redis.existingSecret': 'my-redis',
          'relayServer.redis.existingSecretKey': 'url',
        },
      });
      const ref = envOf(relayContainer(docs), 'RELAY_REDIS_URL')?.valueFrom?.secretKeyRef;
      expect(ref).toEqual({ name: 'my-redis', key: 'url' });
      expect(named(docs, 'Secret', REDIS_SECRET)).toEqual([]);
      expect(named(docs, 'Secret', RELAY)).toEqual([]);
    });

    it("sets RELAY_REPLICA_URL from the pod's IP, with the relay port and its scheme", () => {
      const env = relayContainer(three).env as (Container['env'][number] & {
        valueFrom?: { fieldRef?: { fieldPath: string } };
      })[];
      const podIp = env.findIndex((e) => e.name === 'POD_IP');
      const replicaUrl = env.findIndex((e) => e.name === 'RELAY_REPLICA_URL');
      expect(env[podIp]?.valueFrom?.fieldRef).toEqual({ fieldPath: 'status.podIP' });
      // Kubernetes expands $(POD_IP) only from a variable defined before it.
      expect(podIp).toBeGreaterThanOrEqual(0);
      expect(replicaUrl).toBeGreaterThan(podIp);
      expect(env[replicaUrl]?.value).toBe('http://$(POD_IP):8443');
      const tls = render({
        set: {
          ...threeWithRedis,
          'relayServer.tlsSecretName': 'relay-tls',
          'relayServer.ports.relay': 9443,
        },
      });
      expect(envOf(relayContainer(tls), 'RELAY_REPLICA_URL')?.value).toBe('https://$(POD_IP):9443');
    });

    it("gives each replica an environment the relay's own config loader accepts", () => {
      const environment = podEnvironment(three);
      expect(environment).toMatchObject({
        RELAY_REDIS_URL: redisUrl,
        RELAY_REPLICA_URL: 'http://10.1.2.3:8443',
      });
      expect(() => loadRelayConfig(environment)).not.toThrow();
      // The Redis timeout is one of the settings the values may pass on.
      const tuned = render({
        set: { ...threeWithRedis, 'relayServer.settings.RELAY_REDIS_TIMEOUT_MS': '2000' },
      });
      expect(named(tuned, 'ConfigMap', RELAY)[0]!.data).toMatchObject({
        RELAY_REDIS_TIMEOUT_MS: '2000',
      });
    });

    it('rolls pods one at a time and holds traffic until a pod is ready', () => {
      const relay = relayOf(three);
      expect(relay.spec.strategy).toEqual({
        type: 'RollingUpdate',
        rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
      });
      expect(relayContainer(three).readinessProbe).toMatchObject({
        httpGet: { path: '/health/ready', port: 'health' },
      });
      // One replica with Redis rolls too: the new pod serves before the old one leaves.
      const oneWithRedis = relayOf(
        render({ set: { ...minimal, 'relayServer.redis.url': redisUrl } }),
      );
      expect(oneWithRedis.spec.strategy.type).toBe('RollingUpdate');
    });

    it('adds a disruption budget for the relay pods with more than one replica', () => {
      const budget = named(three, 'PodDisruptionBudget', RELAY)[0]!;
      expect(budget.apiVersion).toBe('policy/v1');
      expect(budget.spec).toEqual({ minAvailable: 1, selector: relayPods });
      const old = render({ set: threeWithRedis, kubeVersion: '1.19.0' });
      expect(named(old, 'PodDisruptionBudget', RELAY)[0]!.apiVersion).toBe('policy/v1beta1');
      const off = render({ set: { ...threeWithRedis, 'podDisruptionBudget.enabled': false } });
      expect(named(off, 'PodDisruptionBudget', RELAY)).toEqual([]);
      const single = render({ set: { ...minimal, 'relayServer.redis.url': redisUrl } });
      expect(named(single, 'PodDisruptionBudget', RELAY)).toEqual([]);
    });

    it('spreads the pods over nodes, preferred by default and configurable', () => {
      expect(relayOf(three).spec.template.spec.topologySpreadConstraints).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: relayPods,
        },
      ]);
      const ownSelector = { matchLabels: { tier: 'relay' } };
      const custom = render({
        set: {
          ...threeWithRedis,
          'relayServer.topologySpreadConstraints[0].maxSkew': 1,
          'relayServer.topologySpreadConstraints[0].topologyKey': 'topology.kubernetes.io/zone',
          'relayServer.topologySpreadConstraints[0].whenUnsatisfiable': 'DoNotSchedule',
          'relayServer.topologySpreadConstraints[1].maxSkew': 2,
          'relayServer.topologySpreadConstraints[1].topologyKey': 'kubernetes.io/hostname',
          'relayServer.topologySpreadConstraints[1].whenUnsatisfiable': 'ScheduleAnyway',
          'relayServer.topologySpreadConstraints[1].labelSelector.matchLabels.tier': 'relay',
        },
      });
      expect(relayOf(custom).spec.template.spec.topologySpreadConstraints).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: relayPods,
        },
        {
          maxSkew: 2,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: ownSelector,
        },
      ]);
    });

    it('lets the pods reach Redis, DNS and each other on the relay port, and nothing else', () => {
      const policy = policyOf(three);
      expect(policy.egress).toEqual([
        {
          ports: [
            { port: 53, protocol: 'UDP' },
            { port: 53, protocol: 'TCP' },
          ],
        },
        { ports: [{ port: 6379, protocol: 'TCP' }] },
        { to: [{ podSelector: relayPods }], ports: [{ port: 8443, protocol: 'TCP' }] },
      ]);
      expect(rulesOnPort(policy.ingress, 8443)).toContainEqual({
        from: [{ podSelector: relayPods }],
        ports: [{ port: 8443, protocol: 'TCP' }],
      });
    });

    it('opens the Redis port and peers the values name, beside the OAuth issuer', () => {
      const redisPeer = { ipBlock: { cidr: '10.20.0.0/16' } };
      const docs = render({
        set: {
          ...threeWithRedis,
          'relayServer.redis.port': 6380,
          'relayServer.redis.egressTo[0].ipBlock.cidr': '10.20.0.0/16',
          'relayServer.networkPolicyFrom[0].ipBlock.cidr': '192.168.0.0/16',
          'relayServer.oauth.issuer': 'https://idp.example.com',
          'relayServer.oauth.publicUrl': 'https://relay.example.com',
        },
      });
      const policy = policyOf(docs);
      expect(rulesOnPort(policy.egress, 6380)).toEqual([
        { ports: [{ port: 6380, protocol: 'TCP' }], to: [redisPeer] },
      ]);
      expect(rulesOnPort(policy.egress, 443)).toHaveLength(1);
      expect(rulesOnPort(policy.egress, 6379)).toEqual([]);
      // Clients from the named network, and the other replicas, reach the relay port.
      expect(rulesOnPort(policy.ingress, 8443).map((rule) => rule.from)).toEqual([
        [{ ipBlock: { cidr: '192.168.0.0/16' } }],
        [{ podSelector: relayPods }],
      ]);
    });

    it('refuses a Redis URL of another scheme and fewer than one replica', () => {
      expect(
        renderError({ set: { ...threeWithRedis, 'relayServer.redis.url': 'http://redis:6379' } }),
      ).toContain('/relayServer/redis/url');
      expect(renderError({ set: { ...minimal, 'relayServer.replicas': 0 } })).toContain(
        '/relayServer/replicas',
      );
    });
  },
);
