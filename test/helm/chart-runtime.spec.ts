/**
 * The chart's logic, read from `helm template` output: what each value switches (replicas or
 * HPA, strategy per store, existing claims and Secrets, Ingress, ServiceMonitor), the API
 * versions chosen per Kubernetes version, the checksums that roll pods, and the wiring between
 * objects (selectors, named ports, mounts behind the environment). Plain values that the
 * templates copy from values.yaml are not restated here: values.schema.json and kubeconform
 * (chart-schemas.spec.ts) check their shape.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  allOfKind,
  appContainer,
  chartDir,
  type Deployment,
  envOf,
  helmMissing,
  type KubeVersion,
  type Manifest,
  oneOfKind,
  render,
  type RenderOptions,
  skipWhenMissing,
} from './helm-tools.js';

const ci = (name: string): string => path.join(chartDir, 'ci', `${name}-values.yaml`);
const deploymentOf = (options: RenderOptions = {}): Deployment =>
  oneOfKind<Deployment>(render(options), 'Deployment');

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart runtime logic${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    let defaults: Manifest[];
    let deployment: Deployment;
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
      defaults = render();
      deployment = oneOfKind<Deployment>(defaults, 'Deployment');
    });

    describe('Deployment', () => {
      it('runs 2 replicas when autoscaling is off, and leaves the count to the HPA when on', () => {
        expect(deploymentOf({ values: [ci('autoscaling-off')] }).spec.replicas).toBe(2);
        expect(deployment.spec.replicas).toBeUndefined();
      });

      it('uses the appVersion as image tag by default, and a version tag when set', () => {
        expect(appContainer(deployment).image).toBe('plant-store:1.1.0');
        const upgraded = deploymentOf({ set: { 'image.tag': '1.1.0' } });
        expect(appContainer(upgraded).image).toBe('plant-store:1.1.0');
      });

      it('gives Node the young generation the benchmark chose, as the image does, or none', () => {
        // Under the 512Mi limit Node would pick 1 MiB semi-spaces (bench/README.md, "Memory in the pod").
        expect(envOf(appContainer(deployment), 'NODE_OPTIONS')?.value).toBe(
          '--max-semi-space-size=16',
        );
        const dockerfile = readFileSync(path.join(chartDir, '../../Dockerfile'), 'utf8');
        expect(dockerfile).toContain('\n    NODE_OPTIONS=--max-semi-space-size=16 \\\n');
        // "" must clear the image's NODE_OPTIONS, not leave it in force.
        const plain = deploymentOf({ set: { nodeOptions: '' } });
        expect(envOf(appContainer(plain), 'NODE_OPTIONS')).toEqual({
          name: 'NODE_OPTIONS',
          value: '',
        });
      });

      it('starts every container with the Node flags the benchmark chose, as the image does', () => {
        // V8 reads this flag from the command line only (bench/README.md, "Memory in the pod").
        const flag = '--initial-old-space-size=128';
        const dockerfile = readFileSync(path.join(chartDir, '../../Dockerfile'), 'utf8');
        expect(dockerfile).toContain(`CMD ["node", "${flag}", "dist/bundle/main.js"]`);
        const all = render({ values: [ci('relay-server'), ci('webhook-worker')] });
        const commands = allOfKind<Deployment>(all, 'Deployment')
          .flatMap((d) => d.spec.template.spec.containers)
          .filter((c) => c.args?.[0] === 'node')
          .map((c) => c.args);
        expect(commands).toEqual(
          expect.arrayContaining(
            ['main', 'relay-server', 'webhook-worker'].map((s) => [
              'node',
              flag,
              `dist/bundle/${s}.js`,
            ]),
          ),
        );
        expect(commands).toHaveLength(3);
        const none = path.join(mkdtempSync(path.join(tmpdir(), 'node-args-')), 'values.yaml');
        writeFileSync(none, 'nodeArgs: []\n');
        const plain = deploymentOf({ values: [none] });
        expect(appContainer(plain).args).toEqual(['node', 'dist/bundle/main.js']);
        rmSync(path.dirname(none), { recursive: true });
      });

      it('leaves CORS off unless corsOrigins lists origins, then passes them as CORS_ORIGINS', () => {
        expect(envOf(appContainer(deployment), 'CORS_ORIGINS')).toBeUndefined();
        const cors = deploymentOf({
          set: {
            'corsOrigins[0]': 'https://docs.example.com',
            'corsOrigins[1]': 'http://localhost:5173',
          },
        });
        expect(envOf(appContainer(cors), 'CORS_ORIGINS')).toEqual({
          name: 'CORS_ORIGINS',
          value: 'https://docs.example.com,http://localhost:5173',
        });
      });

      it('logs every request by default, and passes agent.requestLog=false as SERVICE_REQUEST_LOG', () => {
        expect(envOf(appContainer(deployment), 'SERVICE_REQUEST_LOG')?.value).toBe('true');
        const quiet = deploymentOf({ set: { 'agent.requestLog': false } });
        expect(envOf(appContainer(quiet), 'SERVICE_REQUEST_LOG')?.value).toBe('false');
      });

      it('probes /health on a port the container declares', () => {
        const container = appContainer(deployment);
        const ports = container.ports.map((port) => port.name);
        for (const probe of [container.livenessProbe, container.readinessProbe]) {
          const { httpGet } = probe as { httpGet: { path: string; port: string } };
          expect(httpGet.path).toBe('/health');
          expect(ports).toContain(httpGet.port);
        }
        expect(container.ports.find((port) => port.name === 'health')?.containerPort).toBe(
          Number(envOf(container, 'SERVICE_HEALTH_CHECK_PORT')?.value),
        );
      });

      it('points every folder of the environment at a mount, HOME and the npm cache at a writable one', () => {
        // The root filesystem is read-only: npx-based MCP servers need a writable HOME and cache.
        const container = appContainer(deployment);
        const pod = deployment.spec.template.spec;
        expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true });
        const mountOf = (dir: string) =>
          container.volumeMounts.find(
            (m) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`),
          );
        const volumeOf = (dir: string) => pod.volumes.find((v) => v.name === mountOf(dir)?.name);
        const value = (name: string) => envOf(container, name)?.value ?? '';
        expect(volumeOf(value('SERVICE_CONFIG_DIR'))?.configMap).toEqual({
          name: 'plants-plant-store',
        });
        expect(mountOf(value('SERVICE_CONFIG_DIR'))?.readOnly).toBe(true);
        expect(volumeOf(value('DATA_DIR'))?.persistentVolumeClaim).toBeDefined();
        expect(volumeOf(value('SERVICE_REPOS_DIR'))?.persistentVolumeClaim).toBeDefined();
        for (const writable of ['HOME', 'NPM_CONFIG_CACHE']) {
          expect(volumeOf(value(writable))?.emptyDir, writable).toBeDefined();
          expect(mountOf(value(writable))?.readOnly, writable).toBeUndefined();
        }
        // Agent connection off by default: neither URL nor token.
        expect(envOf(container, 'SERVICE_SERVER_URL')).toBeUndefined();
        expect(envOf(container, 'SERVICE_AGENT_TOKEN')).toBeUndefined();
        expect(envOf(container, 'API_TOKENS')?.valueFrom?.secretKeyRef).toEqual({
          name: 'plants-plant-store',
          key: 'api-tokens',
        });
      });

      it('rolls out one extra pod at a time with PostgreSQL, and recreates with SQLite', () => {
        expect(deployment.spec.strategy).toEqual({
          type: 'RollingUpdate',
          rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
        });
        expect(deploymentOf({ values: [ci('embedded')] }).spec.strategy).toEqual({
          type: 'Recreate',
        });
      });
    });

    describe('volumes', () => {
      it('claims data and repos by default, each mounted by the Deployment', () => {
        const claims = allOfKind(defaults, 'PersistentVolumeClaim').map((pvc) => pvc.metadata.name);
        const mounted = deployment.spec.template.spec.volumes.map(
          (v) => v.persistentVolumeClaim?.claimName,
        );
        expect(claims).toEqual(['plants-plant-store-data', 'plants-plant-store-repos']);
        expect(mounted).toEqual(expect.arrayContaining(claims));
      });

      it('uses existing claims and storage classes when given', () => {
        const external = render({ values: [ci('external-db')] });
        expect(allOfKind(external, 'PersistentVolumeClaim')).toEqual([]);
        expect(oneOfKind<Deployment>(external, 'Deployment').spec.template.spec.volumes).toEqual(
          expect.arrayContaining([
            { name: 'data', persistentVolumeClaim: { claimName: 'shared-plant-data' } },
            { name: 'repos', persistentVolumeClaim: { claimName: 'shared-plant-repos' } },
          ]),
        );
        const classes = render({
          set: { 'persistence.data.storageClass': 'nfs', 'persistence.repos.storageClass': '-' },
        });
        expect(oneOfKind(classes, 'PersistentVolumeClaim', '-data').spec).toMatchObject({
          storageClassName: 'nfs',
        });
        expect(oneOfKind(classes, 'PersistentVolumeClaim', '-repos').spec).toMatchObject({
          storageClassName: '',
        });
      });
    });

    describe('HorizontalPodAutoscaler', () => {
      const cases: [KubeVersion, string][] = [
        ['1.19.0', 'autoscaling/v2beta2'],
        ['1.33.0', 'autoscaling/v2'],
      ];
      it.each(cases)('on Kubernetes %s uses %s and scales the Deployment', (kv, api) => {
        const hpa = oneOfKind(render({ kubeVersion: kv }), 'HorizontalPodAutoscaler');
        expect(hpa.apiVersion).toBe(api);
        expect(hpa.spec?.scaleTargetRef).toEqual({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: deployment.metadata.name,
        });
      });

      it('takes a forced API version, and is absent when autoscaling is off', () => {
        const forced = render({ set: { 'autoscaling.apiVersion': 'autoscaling/v2beta2' } });
        expect(oneOfKind(forced, 'HorizontalPodAutoscaler').apiVersion).toBe('autoscaling/v2beta2');
        const fixed = render({ values: [ci('autoscaling-off')] });
        expect(allOfKind(fixed, 'HorizontalPodAutoscaler')).toEqual([]);
      });
    });

    describe('PodDisruptionBudget', () => {
      const cases: [KubeVersion, string][] = [
        ['1.19.0', 'policy/v1beta1'],
        ['1.33.0', 'policy/v1'],
      ];
      it.each(cases)("on Kubernetes %s uses %s and selects the Deployment's pods", (kv, api) => {
        const pdb = oneOfKind(render({ kubeVersion: kv }), 'PodDisruptionBudget');
        expect(pdb.apiVersion).toBe(api);
        expect(pdb.spec?.selector).toEqual({ matchLabels: deployment.spec.selector.matchLabels });
      });

      it('takes a forced API version; stays with fixed replicas; is absent with one pod', () => {
        const forced = render({ set: { 'podDisruptionBudget.apiVersion': 'policy/v1beta1' } });
        expect(oneOfKind(forced, 'PodDisruptionBudget').apiVersion).toBe('policy/v1beta1');
        const fixed = render({ values: [ci('autoscaling-off')] });
        expect(allOfKind(fixed, 'PodDisruptionBudget')).toHaveLength(1);
        const single = render({ values: [ci('embedded')] });
        expect(allOfKind(single, 'PodDisruptionBudget')).toEqual([]);
      });
    });

    describe('Service and Ingress', () => {
      it('sends the API, health and metrics ports to ports the pods declare', () => {
        const service = oneOfKind(defaults, 'Service', '-plant-store');
        const targets = (service.spec?.ports as { targetPort: string }[]).map((p) => p.targetPort);
        expect(targets).toEqual(['http', 'health', 'metrics']);
        const declared = appContainer(deployment).ports.map((port) => port.name);
        expect(declared).toEqual(expect.arrayContaining(targets));
        expect(service.spec?.selector).toEqual(deployment.spec.selector.matchLabels);
      });

      it('routes the Ingress to the API port only when enabled', () => {
        expect(allOfKind(defaults, 'Ingress')).toEqual([]);
        const ingress = oneOfKind(render({ values: [ci('monitoring-ingress')] }), 'Ingress');
        expect(ingress.spec).toMatchObject({
          ingressClassName: 'nginx',
          tls: [{ secretName: 'plants-example-com-tls', hosts: ['plants.example.com'] }],
          rules: [
            {
              host: 'plants.example.com',
              http: {
                paths: [
                  {
                    path: '/',
                    pathType: 'Prefix',
                    backend: { service: { name: 'plants-plant-store', port: { number: 3000 } } },
                  },
                ],
              },
            },
          ],
        });
      });
    });

    describe('NetworkPolicy', () => {
      it('lets health in from kube-system, metrics from monitoring, and the API from anywhere', () => {
        const policy = oneOfKind(defaults, 'NetworkPolicy', '-plant-store');
        expect(policy.spec?.podSelector).toEqual({
          matchLabels: deployment.spec.selector.matchLabels,
        });
        expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
        const ns = (name: string) => ({
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } },
        });
        expect(policy.spec?.ingress).toEqual([
          { from: [ns('kube-system')], ports: [{ port: 8080, protocol: 'TCP' }] },
          { from: [ns('monitoring')], ports: [{ port: 9090, protocol: 'TCP' }] },
          { ports: [{ port: 3000, protocol: 'TCP' }] },
        ]);
      });

      it('lets out TCP 443, DNS on UDP and TCP 53, and the bundled database only', () => {
        const policy = oneOfKind(defaults, 'NetworkPolicy', '-plant-store');
        expect(policy.spec?.egress).toEqual([
          { ports: [{ port: 443, protocol: 'TCP' }] },
          {
            ports: [
              { port: 53, protocol: 'UDP' },
              { port: 53, protocol: 'TCP' },
            ],
          },
          {
            to: [
              {
                podSelector: {
                  matchLabels: {
                    'app.kubernetes.io/name': 'plant-store',
                    'app.kubernetes.io/instance': 'plants',
                    'app.kubernetes.io/component': 'postgresql',
                  },
                },
              },
            ],
            ports: [{ port: 5432, protocol: 'TCP' }],
          },
        ]);
        const postgres = oneOfKind(defaults, 'NetworkPolicy', '-postgresql');
        expect(postgres.spec?.ingress).toEqual([
          {
            from: [{ podSelector: { matchLabels: deployment.spec.selector.matchLabels } }],
            ports: [{ port: 5432, protocol: 'TCP' }],
          },
        ]);
        expect(postgres.spec?.egress).toEqual([]);
      });

      it('opens the external database port, and restricts the API to configured sources', () => {
        const external = oneOfKind(
          render({ values: [ci('external-db')] }),
          'NetworkPolicy',
          '-plant-store',
        );
        expect(external.spec?.egress).toContainEqual({ ports: [{ port: 6432, protocol: 'TCP' }] });
        const restricted = oneOfKind(
          render({ values: [ci('monitoring-ingress')] }),
          'NetworkPolicy',
          '-plant-store',
        );
        expect(restricted.spec?.ingress).toContainEqual({
          ports: [{ port: 3000, protocol: 'TCP' }],
          from: [
            {
              namespaceSelector: {
                matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' },
              },
            },
          ],
        });
      });
    });

    describe('ServiceMonitor', () => {
      const monitorApi = 'monitoring.coreos.com/v1/ServiceMonitor';

      it('is absent without the monitoring.coreos.com API, present when it is served', () => {
        expect(allOfKind(defaults, 'ServiceMonitor')).toEqual([]);
        const monitor = oneOfKind(render({ apiVersions: [monitorApi] }), 'ServiceMonitor');
        expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
        expect(monitor.spec).toMatchObject({
          selector: { matchLabels: deployment.spec.selector.matchLabels },
          endpoints: [{ port: 'metrics', path: '/metrics' }],
        });
      });

      it('is rendered when forced, and never when disabled', () => {
        const forced = oneOfKind(render({ values: [ci('monitoring-ingress')] }), 'ServiceMonitor');
        expect(forced.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
        const off = render({ apiVersions: [monitorApi], set: { 'serviceMonitor.enabled': false } });
        expect(allOfKind(off, 'ServiceMonitor')).toEqual([]);
      });
    });

    describe('config and secrets', () => {
      const checksums = (options: RenderOptions) =>
        deploymentOf(options).spec.template.metadata.annotations;
      const fsServer = { 'mcpServers.fs.command': 'npx', 'mcpServers.fs.args[0]': '-y' };

      it('writes mcp-servers.json from mcpServers', () => {
        const configMap = oneOfKind(render({ set: fsServer }), 'ConfigMap');
        expect(JSON.parse(configMap.data!['mcp-servers.json']!)).toEqual({
          mcpServers: { fs: { command: 'npx', args: ['-y'] } },
        });
        const empty = oneOfKind(defaults, 'ConfigMap');
        expect(JSON.parse(empty.data!['mcp-servers.json']!)).toEqual({ mcpServers: {} });
      });

      it('changes the checksum annotation when mcp-servers.json changes, and only then', () => {
        const base = checksums({});
        expect(base['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
        expect(checksums({})).toEqual(base);
        expect(checksums({ set: { 'resources.limits.cpu': '1' } })).toEqual(base);
        expect(checksums({ set: fsServer })['checksum/config']).not.toBe(base['checksum/config']);
        const agent = checksums({ values: [ci('agent')] });
        expect(agent['checksum/secret']).not.toBe(base['checksum/secret']);
      });

      it('generates a random API token into the chart Secret', () => {
        const secret = oneOfKind(defaults, 'Secret', '-plant-store');
        const token = Buffer.from(secret.data!['api-tokens']!, 'base64').toString();
        expect(token).toMatch(/^[A-Za-z0-9]{48}$/);
      });

      it('takes the agent token and tokens from values into the chart Secret', () => {
        const docs = render({ values: [ci('agent')] });
        const secret = oneOfKind(docs, 'Secret', '-plant-store');
        const decoded = Object.fromEntries(
          Object.entries(secret.data!).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
        );
        expect(decoded).toEqual({
          'agent-token': 'example-agent-token',
          'api-tokens': 'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
        });
        const container = appContainer(oneOfKind<Deployment>(docs, 'Deployment'));
        expect(envOf(container, 'SERVICE_SERVER_URL')?.value).toBe('https://agents.example.com/v1');
        expect(envOf(container, 'SERVICE_AGENT_TOKEN')?.valueFrom?.secretKeyRef).toEqual({
          name: 'plants-plant-store',
          key: 'agent-token',
        });
        expect(envOf(container, 'SERVICE_LOG_LEVEL')?.value).toBe('debug');
      });

      it('sends the plant webhook only when receivers are set, secrets from a Secret, ports opened', () => {
        expect(envOf(appContainer(deployment), 'WEBHOOK_URLS')).toBeUndefined();
        const secret = 'whsec_' + Buffer.alloc(32, 1).toString('base64');
        const docs = render({
          set: {
            'webhook.urls[0]': 'https://hooks.example.com/plants',
            'webhook.urls[1]': 'http://receiver.tools.svc:8080/hook',
            'webhook.secrets[0]': secret,
            'webhook.secrets[1]': secret,
            'webhook.egressPorts[0]': 8080,
          },
        });
        const container = appContainer(oneOfKind<Deployment>(docs, 'Deployment'));
        expect(envOf(container, 'WEBHOOK_URLS')?.value).toBe(
          'https://hooks.example.com/plants,http://receiver.tools.svc:8080/hook',
        );
        expect(envOf(container, 'WEBHOOK_SECRETS')?.valueFrom?.secretKeyRef).toEqual({
          name: 'plants-plant-store',
          key: 'webhook-secrets',
        });
        const data = oneOfKind(docs, 'Secret', '-plant-store').data!;
        expect(Buffer.from(data['webhook-secrets']!, 'base64').toString()).toBe(
          `${secret},${secret}`,
        );
        const policy = oneOfKind(docs, 'NetworkPolicy', '-plant-store');
        expect(policy.spec?.egress).toContainEqual({ ports: [{ port: 8080, protocol: 'TCP' }] });
      });

      it('reads every secret from existing Secrets and makes none', () => {
        const docs = render({ values: [ci('external-db')] });
        expect(allOfKind(docs, 'Secret')).toEqual([]);
        expect(allOfKind(docs, 'StatefulSet')).toEqual([]);
        const container = appContainer(oneOfKind<Deployment>(docs, 'Deployment'));
        const ref = (name: string) => envOf(container, name)?.valueFrom?.secretKeyRef;
        expect(ref('SERVICE_AGENT_TOKEN')).toEqual({ name: 'plant-store-agent', key: 'token' });
        expect(ref('API_TOKENS')).toEqual({ name: 'plant-store-api', key: 'tokens' });
        expect(ref('DATABASE_URL')).toEqual({ name: 'plant-store-database', key: 'url' });
      });
    });

    describe('database', () => {
      it('bundles a non-root PostgreSQL with its own volume and points DATABASE_URL at it', () => {
        const statefulSet = oneOfKind(defaults, 'StatefulSet');
        expect(statefulSet.spec).toMatchObject({
          replicas: 1,
          template: { spec: { securityContext: { runAsNonRoot: true } } },
        });
        expect(statefulSet.spec?.volumeClaimTemplates).toHaveLength(1);
        const container = appContainer(deployment);
        expect(envOf(container, 'DATABASE_URL')?.value).toBe(
          'postgres://plantstore@plants-plant-store-postgresql:5432/plantstore',
        );
        expect(envOf(container, 'PGPASSWORD')?.valueFrom?.secretKeyRef).toEqual({
          name: 'plants-plant-store-postgresql',
          key: 'password',
        });
      });

      it('uses the embedded store without DATABASE_URL when no database is configured', () => {
        const docs = render({ values: [ci('embedded')] });
        const container = appContainer(oneOfKind<Deployment>(docs, 'Deployment'));
        expect(envOf(container, 'DATABASE_URL')).toBeUndefined();
        expect(oneOfKind<Deployment>(docs, 'Deployment').spec.replicas).toBe(1);
        expect(allOfKind(docs, 'StatefulSet')).toEqual([]);
      });
    });

    it('passes the common pod settings through', () => {
      const pod = deploymentOf({ values: [ci('agent')] }).spec.template;
      expect(pod.metadata.annotations).toMatchObject({ 'example.com/team': 'plants' });
      expect(pod.metadata.labels).toMatchObject({ 'example.com/tier': 'backend' });
      expect(pod.spec).toMatchObject({
        imagePullSecrets: [{ name: 'regcred' }],
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        priorityClassName: 'plant-store-high',
        tolerations: [{ key: 'dedicated' }],
        topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone' }],
        affinity: { podAntiAffinity: {} },
      });
      const container = pod.spec.containers[0]!;
      expect(container.image).toBe('registry.example.com/plant-store:1.1.0');
      expect(envOf(container, 'NODE_EXTRA_CA_CERTS')?.value).toBe('/etc/ssl/extra/ca.crt');
      expect(container.volumeMounts).toContainEqual({
        name: 'extra-ca',
        mountPath: '/etc/ssl/extra',
        readOnly: true,
      });
      expect(pod.spec.volumes).toContainEqual({
        name: 'extra-ca',
        configMap: { name: 'extra-ca' },
      });
    });
  },
);
