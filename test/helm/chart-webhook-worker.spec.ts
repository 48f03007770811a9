/**
 * Webhook delivery as its own role in the chart (webhook.worker.*, off by default): the worker
 * Deployment and its Service, ServiceMonitor, disruption budget and NetworkPolicy, that its pod
 * runs the app's image with the worker's command and an environment the app's own config loader
 * accepts, that the app pods then deliver nothing, and the refusal with the embedded store.
 * helm lint and kubeconform cover ci/webhook-worker-values.yaml with the other value sets
 * (chart-schemas.spec.ts).
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import {
  appContainer,
  chartDir,
  type Container,
  type Deployment,
  envOf,
  helmMissing,
  type Manifest,
  render,
  renderError,
  skipWhenMissing,
} from './helm-tools.js';

const workerValues = path.join(chartDir, 'ci', 'webhook-worker-values.yaml');
const APP = 'plants-plant-store';
const WORKER = 'plants-plant-store-webhook-worker';
const named = (docs: Manifest[], kind: string, name: string) =>
  docs.filter((doc) => doc.kind === kind && doc.metadata.name === name);
const workerContainer = (deployment: Deployment): Container =>
  deployment.spec.template.spec.containers.find((c) => c.name === 'webhook-worker')!;

interface PolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  ingress: { ports?: { port: number }[]; from?: { podSelector?: unknown }[] }[];
  egress: { ports?: { port: number; protocol: string }[]; to?: unknown[] }[];
}
const policySpec = (docs: Manifest[], name: string) =>
  named(docs, 'NetworkPolicy', name)[0]!.spec as unknown as PolicySpec;
const egressPorts = (spec: PolicySpec) =>
  spec.egress.flatMap((rule) => (rule.ports ?? []).map((p) => p.port));

/** The environment a container gets, with its values from the chart's Secret decoded. */
function environmentOf(container: Container, docs: Manifest[]): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const variable of container.env) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      const secret = named(docs, 'Secret', ref.name)[0]!;
      environment[variable.name] = Buffer.from(secret.data![ref.key]!, 'base64').toString();
    } else if (variable.value !== undefined) {
      environment[variable.name] = variable.value;
    }
  }
  return environment;
}

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart webhook worker${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    let docs: Manifest[];
    let worker: Deployment;
    let app: Deployment;
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
      docs = render({ values: [workerValues] });
      worker = named(docs, 'Deployment', WORKER)[0] as Deployment;
      app = named(docs, 'Deployment', APP)[0] as Deployment;
    });

    it('renders nothing of the worker when off, and the app pods deliver', () => {
      const off = render({ values: [workerValues], set: { 'webhook.worker.enabled': false } });
      const workerObjects = off.filter(
        (doc) => doc.metadata.labels?.['app.kubernetes.io/component'] === 'webhook-worker',
      );
      expect(workerObjects).toEqual([]);
      const appPod = appContainer(named(off, 'Deployment', APP)[0] as Deployment);
      expect(envOf(appPod, 'WEBHOOK_URLS')).toBeDefined();
      expect(envOf(appPod, 'WEBHOOK_DELIVERY')).toBeUndefined();
      // The app pods post to the receivers themselves: their policy opens the extra port.
      expect(egressPorts(policySpec(off, APP))).toContain(8443);
      // Off is the default.
      expect(render().filter((doc) => doc.metadata.name === WORKER)).toEqual([]);
    });

    it('renders its Deployment, Service, ServiceMonitor, PodDisruptionBudget and NetworkPolicy', () => {
      for (const kind of [
        'Deployment',
        'Service',
        'ServiceMonitor',
        'PodDisruptionBudget',
        'NetworkPolicy',
      ]) {
        expect(named(docs, kind, WORKER), kind).toHaveLength(1);
      }
      expect(worker.spec.replicas).toBe(3);
      expect(worker.spec.selector.matchLabels['app.kubernetes.io/component']).toBe(
        'webhook-worker',
      );
      const service = named(docs, 'Service', WORKER)[0]!;
      expect(service.spec).toMatchObject({
        clusterIP: 'None',
        selector: { 'app.kubernetes.io/component': 'webhook-worker' },
        ports: [{ name: 'metrics', port: 9090, targetPort: 'metrics' }],
      });
      const monitor = named(docs, 'ServiceMonitor', WORKER)[0]!;
      expect(monitor.spec).toMatchObject({
        selector: { matchLabels: { 'app.kubernetes.io/component': 'webhook-worker' } },
        endpoints: [{ port: 'metrics', path: '/metrics' }],
      });
      const budget = named(docs, 'PodDisruptionBudget', WORKER)[0]!;
      expect(budget.spec).toMatchObject({
        minAvailable: 1,
        selector: { matchLabels: { 'app.kubernetes.io/component': 'webhook-worker' } },
      });
    });

    it("runs the app's image with the worker's command and the app's security context", () => {
      const container = workerContainer(worker);
      expect(container.image).toBe(appContainer(app).image);
      expect(container.args).toEqual([
        'node',
        '--initial-old-space-size=128',
        'dist/bundle/webhook-worker.js',
      ]);
      // No `command`: the image's tini stays PID 1 and passes SIGTERM on.
      expect(container).not.toHaveProperty('command');
      expect(container.securityContext).toEqual(appContainer(app).securityContext);
      expect(worker.spec.template.spec.securityContext).toEqual(
        app.spec.template.spec.securityContext,
      );
      expect(container.resources).toEqual({
        requests: { cpu: '100m', memory: '128Mi' },
        limits: { cpu: '500m', memory: '256Mi' },
      });
      // A read-only root: /tmp is the only writable place, and it is all the worker mounts.
      expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    });

    it('probes /health/live and /health/ready on the health port, serves metrics', () => {
      const container = workerContainer(worker);
      expect(container.ports.map((p) => [p.name, p.containerPort])).toEqual([
        ['health', 8080],
        ['metrics', 9090],
      ]);
      expect(container.livenessProbe).toMatchObject({
        httpGet: { path: '/health/live', port: 'health' },
      });
      expect(container.readinessProbe).toMatchObject({
        httpGet: { path: '/health/ready', port: 'health' },
      });
    });

    it("gives the worker the app's Secret and an environment the app's config loader accepts", () => {
      const container = workerContainer(worker);
      expect(envOf(container, 'WEBHOOK_SECRETS')?.valueFrom?.secretKeyRef).toEqual(
        envOf(appContainer(app), 'WEBHOOK_SECRETS')?.valueFrom?.secretKeyRef,
      );
      expect(envOf(container, 'DATABASE_URL')).toEqual(envOf(appContainer(app), 'DATABASE_URL'));
      expect(envOf(container, 'PGPASSWORD')).toEqual(envOf(appContainer(app), 'PGPASSWORD'));
      const environment = environmentOf(container, docs);
      delete environment.PGPASSWORD; // read by the PostgreSQL client, not the config loader
      expect(environment.API_TOKENS).toBeUndefined(); // it serves no API
      const config = loadConfig(environment, { role: 'webhook-worker' });
      expect(config.database.kind).toBe('postgres');
      expect(config.webhooks.receivers).toHaveLength(2);
      expect(config.webhooks.retrySchedule).toEqual([5, 60, 600]);
      expect(config.webhooks.maxInFlightPerReceiver).toBe(8);
      expect(config.webhooks.delivery).toBe('worker');
      expect([config.health.port, config.metrics.port]).toEqual([8080, 9090]);
    });

    it('tells the app pods to deliver nothing (WEBHOOK_DELIVERY=external)', () => {
      const container = appContainer(app);
      expect(envOf(container, 'WEBHOOK_DELIVERY')).toEqual({
        name: 'WEBHOOK_DELIVERY',
        value: 'external',
      });
      // The app still knows the receivers: it writes one outbox row for each.
      const environment = environmentOf(container, docs);
      delete environment.PGPASSWORD;
      const config = loadConfig({ ...environment, SERVICE_CONFIG_DIR: '' });
      expect(config.webhooks.delivery).toBe('external');
      expect(config.webhooks.receivers).toHaveLength(2);
    });

    it('lets the worker reach the receivers, DNS and the database; the app no receiver port', () => {
      const spec = policySpec(docs, WORKER);
      expect(spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe('webhook-worker');
      expect(egressPorts(spec)).toEqual([443, 8443, 53, 53, 5432]);
      expect(spec.ingress.flatMap((rule) => rule.ports!.map((p) => p.port))).toEqual([8080, 9090]);
      // The app's policy drops the receivers' extra port: its pods post to no receiver.
      expect(egressPorts(policySpec(docs, APP))).not.toContain(8443);
      // The bundled PostgreSQL lets the workers in beside the app pods.
      const database = policySpec(docs, 'plants-plant-store-postgresql');
      const components = database.ingress[0]!.from!.map(
        (peer) =>
          (peer.podSelector as { matchLabels: Record<string, string> }).matchLabels[
            'app.kubernetes.io/component'
          ],
      );
      expect(components).toEqual(['server', 'webhook-worker']);
    });

    it('opens the external database port to the worker', () => {
      const external = render({
        set: {
          'webhook.worker.enabled': true,
          'postgresql.enabled': false,
          'database.url': 'postgres://u:p@db:6432/plants',
          'database.port': 6432,
        },
      });
      expect(egressPorts(policySpec(external, WORKER))).toEqual([443, 53, 53, 6432]);
      const container = workerContainer(named(external, 'Deployment', WORKER)[0] as Deployment);
      expect(envOf(container, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
        name: APP,
        key: 'database-url',
      });
    });

    it('has no disruption budget for a single worker', () => {
      const single = render({
        set: { 'webhook.worker.enabled': true, 'webhook.worker.replicas': 1 },
      });
      expect(named(single, 'PodDisruptionBudget', WORKER)).toHaveLength(0);
      expect(named(single, 'Deployment', WORKER)).toHaveLength(1);
    });

    it('refuses workers with the embedded SQLite store, in one sentence', () => {
      const embedded = {
        'postgresql.enabled': false,
        'autoscaling.enabled': false,
        replicaCount: 1,
      };
      expect(render({ set: embedded }).length).toBeGreaterThan(0);
      expect(renderError({ set: { ...embedded, 'webhook.worker.enabled': true } })).toContain(
        'plant-store: webhook.worker.enabled needs PostgreSQL (postgresql.enabled=true, database.url or database.existingSecret), because with the embedded SQLite store one process writes and delivers the webhook.',
      );
    });

    it('refuses worker values the schema does not allow', () => {
      expect(renderError({ set: { 'webhook.worker.replicas': 0 } })).toContain(
        '/webhook/worker/replicas',
      );
      expect(renderError({ set: { 'webhook.worker.command': 'x' } })).toContain(
        "additional properties 'command' not allowed",
      );
    });
  },
);
