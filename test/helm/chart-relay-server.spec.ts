/**
 * The relay server in the chart (relayServer.*, off by default): what the toggle renders, that
 * its pod runs the same image as the app with the relay's command and the app's security
 * context, that the environment it gets is one the relay's own config loader accepts, and the
 * settings the chart refuses. helm lint and kubeconform cover ci/relay-server-values.yaml with
 * the other value sets (chart-schemas.spec.ts).
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRelayConfig } from '../../src/relay-server/config/load-relay-config.js';
import {
  allOfKind,
  appContainer,
  chartDir,
  type Container,
  type Deployment,
  helmMissing,
  type Manifest,
  oneOfKind,
  render,
  renderError,
  skipWhenMissing,
  minimalRelay as minimal,
} from './helm-tools.js';

const relayValues = path.join(chartDir, 'ci', 'relay-server-values.yaml');
const RELAY = 'plants-plant-store-relay';
const named = (docs: Manifest[], kind: string, name: string) =>
  docs.filter((doc) => doc.kind === kind && doc.metadata.name === name);
const relayContainer = (deployment: Deployment): Container =>
  deployment.spec.template.spec.containers.find((c) => c.name === 'relay-server')!;

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart relay server${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    let docs: Manifest[];
    let relay: Deployment;
    let app: Deployment;
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
      docs = render({ values: [relayValues] });
      relay = named(docs, 'Deployment', RELAY)[0] as Deployment;
      app = named(docs, 'Deployment', 'plants-plant-store')[0] as Deployment;
    });

    it('renders nothing of the relay by default', () => {
      const defaults = render({ set: { 'serviceMonitor.force': true } });
      const relayObjects = defaults.filter(
        (doc) => doc.metadata.labels?.['app.kubernetes.io/component'] === 'relay-server',
      );
      expect(relayObjects).toEqual([]);
    });

    it('renders its Deployment, Service, ConfigMap, Secret, NetworkPolicy and ServiceMonitor', () => {
      for (const kind of [
        'Deployment',
        'Service',
        'ConfigMap',
        'Secret',
        'NetworkPolicy',
        'ServiceMonitor',
      ]) {
        expect(named(docs, kind, RELAY), kind).toHaveLength(1);
      }
      // The app is still there, and its objects select only its own pods.
      expect(appContainer(app).image).toBe('plant-store:1.1.0');
      const appPolicy = named(docs, 'NetworkPolicy', 'plants-plant-store')[0]!;
      expect(
        (appPolicy.spec as { podSelector: { matchLabels: Record<string, string> } }).podSelector
          .matchLabels['app.kubernetes.io/component'],
      ).toBe('server');
    });

    it("runs the app's image with the relay's command, one pod, the app's security context", () => {
      const container = relayContainer(relay);
      expect(container.image).toBe(appContainer(app).image);
      expect(container.args).toEqual([
        'node',
        '--initial-old-space-size=128',
        'dist/bundle/relay-server.js',
      ]);
      // No `command`: the image's tini stays PID 1 and passes SIGTERM on.
      expect(container).not.toHaveProperty('command');
      expect(relay.spec.replicas).toBe(1);
      expect(relay.spec.strategy.type).toBe('Recreate');
      expect(container.securityContext).toEqual(appContainer(app).securityContext);
      expect(container.securityContext).toMatchObject({
        runAsUser: 1000,
        readOnlyRootFilesystem: true,
      });
      expect(relay.spec.template.spec.securityContext).toEqual(
        app.spec.template.spec.securityContext,
      );
      expect(relay.spec.selector.matchLabels['app.kubernetes.io/component']).toBe('relay-server');
    });

    it('probes /health on the health port and names the three ports', () => {
      const container = relayContainer(relay);
      expect(container.ports.map((p) => [p.name, p.containerPort])).toEqual([
        ['relay', 8443],
        ['health', 8081],
        ['metrics', 9091],
      ]);
      expect(container.livenessProbe).toMatchObject({
        httpGet: { path: '/health/live', port: 'health' },
      });
      expect(container.readinessProbe).toMatchObject({
        httpGet: { path: '/health/ready', port: 'health' },
      });
      const service = named(docs, 'Service', RELAY)[0]!;
      expect(service.spec).toMatchObject({
        type: 'LoadBalancer',
        ports: [
          { name: 'relay', port: 443, targetPort: 'relay' },
          { name: 'health', targetPort: 'health' },
          { name: 'metrics', targetPort: 'metrics' },
        ],
      });
      const monitor = named(docs, 'ServiceMonitor', RELAY)[0]!;
      expect(monitor.spec).toMatchObject({ endpoints: [{ port: 'metrics', path: '/metrics' }] });
    });

    it("gives the pod an environment the relay's own config loader accepts", () => {
      const container = relayContainer(relay) as Container & {
        envFrom: { configMapRef: { name: string } }[];
      };
      const configMap = named(docs, 'ConfigMap', RELAY)[0]!;
      const secret = named(docs, 'Secret', RELAY)[0]!;
      expect(container.envFrom).toEqual([{ configMapRef: { name: RELAY } }]);
      const environment: Record<string, string> = { ...configMap.data };
      for (const variable of container.env) {
        const ref = variable.valueFrom?.secretKeyRef;
        if (ref) {
          expect(ref.name).toBe(RELAY);
          environment[variable.name] = Buffer.from(secret.data![ref.key]!, 'base64').toString();
        } else if (variable.value !== undefined) {
          environment[variable.name] = variable.value;
        }
      }
      // The TLS files are mounted from the Secret; the loader reads them, so point it at none.
      expect(environment.RELAY_TLS_CERT_FILE).toBe('/app/tls/tls.crt');
      expect(container.volumeMounts).toEqual([
        { name: 'tls', mountPath: '/app/tls', readOnly: true },
      ]);
      delete environment.RELAY_TLS_CERT_FILE;
      delete environment.RELAY_TLS_KEY_FILE;
      const config = loadRelayConfig(environment);
      expect(config.agents.map((a) => a.name)).toEqual(['shop']);
      expect(config.clients.map((c) => [c.name, [...c.agents]])).toEqual([['alice', ['shop']]]);
      expect(config.basePath).toBe('/relay');
      expect(config.maxInFlightPerClient).toBe(64);
      expect(config.http.port).toBe(8443);
    });

    it('takes RELAY_AGENTS and RELAY_CLIENTS from an existing Secret', () => {
      const rendered = render({
        set: {
          'relayServer.enabled': true,
          'relayServer.existingSecret': 'my-relay',
          'relayServer.existingSecretAgentsKey': 'agents',
        },
      });
      expect(named(rendered, 'Secret', RELAY)).toHaveLength(0);
      const deployment = named(rendered, 'Deployment', RELAY)[0] as Deployment;
      const refs = relayContainer(deployment).env.map((e) => e.valueFrom?.secretKeyRef);
      expect(refs).toContainEqual({ name: 'my-relay', key: 'agents' });
      expect(refs).toContainEqual({ name: 'my-relay', key: 'relay-clients' });
    });

    it('lets only the allowed peers reach the relay port, and gives the relay no egress', () => {
      const policy = named(docs, 'NetworkPolicy', RELAY)[0]!;
      const spec = policy.spec as {
        ingress: { ports: { port: number }[]; from?: unknown[] }[];
        egress: unknown[];
      };
      const relayRule = spec.ingress.find((rule) => rule.ports[0]?.port === 8443);
      expect(relayRule?.from).toEqual([{ ipBlock: { cidr: '10.0.0.0/8' } }]);
      expect(spec.egress).toEqual([]);
    });

    it('refuses a relay without agents or clients, a client of an unknown agent, equal ports', () => {
      expect(renderError({ set: { 'relayServer.enabled': true } })).toContain(
        'relayServer.enabled needs relayServer.agents and relayServer.clients',
      );
      expect(
        renderError({ set: { ...minimal, 'relayServer.clients.alice.agents[0]': 'lab' } }),
      ).toContain(
        'relayServer.clients.alice.agents names "lab", which is not in relayServer.agents',
      );
      expect(renderError({ set: { ...minimal, 'relayServer.ports.health': 8443 } })).toContain(
        'relayServer.ports.relay, .health and .metrics must differ',
      );
      // Precondition: the minimal set renders.
      expect(allOfKind(render({ set: minimal }), 'Deployment')).toHaveLength(2);
    });

    it('takes TLS handshakes in turns by default (250 a second)', () => {
      const data = named(render({ set: minimal }), 'ConfigMap', RELAY)[0]!.data;
      expect(data).toMatchObject({ RELAY_TLS_MAX_HANDSHAKES_PER_SECOND: '250' });
    });

    it("passes on the connection caps of the chart README's many-agents example", () => {
      const settings = {
        RELAY_MAX_CONNECTIONS: '5000',
        RELAY_TLS_MAX_HANDSHAKES_PER_SECOND: '250',
      };
      const tuned = render({
        set: {
          ...minimal,
          ...Object.fromEntries(
            Object.entries(settings).map(([name, value]) => [
              `relayServer.settings.${name}`,
              value,
            ]),
          ),
        },
      });
      expect(named(tuned, 'ConfigMap', RELAY)[0]!.data).toMatchObject(settings);
    });

    it('refuses relay values the schema does not allow', () => {
      expect(renderError({ set: { ...minimal, 'relayServer.agents.shop[0]': 'short' } })).toContain(
        '/relayServer/agents/shop/0',
      );
      expect(
        renderError({ set: { ...minimal, 'relayServer.settings.RELAY_AGENTS': '{}' } }),
      ).toContain('/relayServer/settings');
      expect(renderError({ set: { ...minimal, 'relayServer.basePath': 'relay/' } })).toContain(
        '/relayServer/basePath',
      );
      expect(renderError({ set: { ...minimal, 'relayServer.replica': 2 } })).toContain(
        "additional properties 'replica' not allowed",
      );
    });

    it('passes extraEnv to the relay container, e.g. for tracing', () => {
      const set = {
        ...minimal,
        'relayServer.extraEnv[0].name': 'OTEL_EXPORTER_OTLP_ENDPOINT',
        'relayServer.extraEnv[0].value': 'http://collector:4318',
      };
      const deployment = named(render({ set }), 'Deployment', RELAY)[0] as Deployment;
      expect(relayContainer(deployment).env).toContainEqual({
        name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
        value: 'http://collector:4318',
      });
    });

    it('leaves the app Deployment as it was', () => {
      const without = oneOfKind<Deployment>(render(), 'Deployment');
      const withRelay = named(render({ set: minimal }), 'Deployment', 'plants-plant-store')[0];
      expect(withRelay).toEqual(without);
    });
  },
);
