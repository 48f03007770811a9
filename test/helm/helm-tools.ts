/**
 * Runs the pinned helm and kubeconform that `.ci/install-helm-tools.sh` installs into
 * $PLANT_STORE_TOOLS/bin (default ~/.cache/plant-store-tools/bin), else takes them from PATH,
 * and parses rendered manifests. Outside CI a missing helm skips the chart specs with a reason;
 * in CI (CI set) it fails them, so a broken tools step cannot turn the specs into no-ops.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const chartDir = path.resolve(import.meta.dirname, '../../helm/plant-store');
export const toolsDir =
  process.env.PLANT_STORE_TOOLS ?? path.join(homedir(), '.cache', 'plant-store-tools');

/** The oldest Kubernetes the chart supports (seed) and a current one. */
export const kubeVersions = ['1.19.0', '1.33.0'] as const;
export type KubeVersion = (typeof kubeVersions)[number];

/** The value sets under helm/plant-store/ci, as absolute paths. */
export const ciValueFiles = readdirSync(path.join(chartDir, 'ci'))
  .filter((name) => name.endsWith('-values.yaml'))
  .sort()
  .map((name) => path.join(chartDir, 'ci', name));

function findTool(name: string): string | undefined {
  const dirs = [path.join(toolsDir, 'bin'), ...(process.env.PATH ?? '').split(path.delimiter)];
  for (const dir of dirs.filter(Boolean)) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; try the next folder
    }
  }
  return undefined;
}

export const helmBin = findTool('helm');
export const helmDocsBin = findTool('helm-docs');
export const kubeconformBin = findTool('kubeconform');
export const promtoolBin = findTool('promtool');
export const schemaDir = (kubeVersion: KubeVersion): string =>
  path.join(toolsDir, 'k8s-schemas', `v${kubeVersion}-local-strict`);

const installHint = 'run .ci/install-helm-tools.sh (or set PLANT_STORE_TOOLS)';
/** Why the chart specs cannot run here, or undefined when they can. */
export const helmMissing = helmBin
  ? undefined
  : `helm not found in ${toolsDir}/bin or PATH: ${installHint}`;
/** Why the kubeconform specs cannot run here, or undefined when they can. */
export const kubeconformMissing =
  helmMissing ??
  (!kubeconformBin
    ? `kubeconform not found in ${toolsDir}/bin or PATH: ${installHint}`
    : kubeVersions
        .filter((v) => !existsSync(schemaDir(v)))
        .map((v) => `Kubernetes ${v} schemas missing at ${schemaDir(v)}: ${installHint}`)[0]);
/** Why the chart README's values table cannot be regenerated here, or undefined when it can. */
export const helmDocsMissing = helmDocsBin
  ? undefined
  : `helm-docs not found in ${toolsDir}/bin or PATH: ${installHint}`;
/** Why the Prometheus rules cannot be checked here, or undefined when they can. */
export const promtoolMissing = promtoolBin
  ? undefined
  : `promtool not found in ${toolsDir}/bin or PATH: run .ci/install-promtool.sh (or set PLANT_STORE_TOOLS)`;
/** In CI the tools are installed first: a missing tool is an error there, not a skip. */
export const skipWhenMissing = (reason: string | undefined): boolean =>
  reason !== undefined && !process.env.CI;
// Why they are skipped is said once per run, by test/support/skip-notes.ts (a globalSetup).

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function run(bin: string, args: string[], input?: string): RunResult {
  const result = spawnSync(bin, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export interface RenderOptions {
  /** Value files (absolute paths), in order. */
  values?: string[];
  /** --set pairs; strings go through --set-string so "1.0" stays a string. */
  set?: Record<string, string | number | boolean>;
  /** Kubernetes version to render for (default 1.33.0). */
  kubeVersion?: string;
  /** Extra API versions the simulated cluster serves, e.g. monitoring.coreos.com/v1/ServiceMonitor. */
  apiVersions?: string[];
}

export const releaseName = 'plants';
export const namespace = 'garden';

function templateArgs(options: RenderOptions): string[] {
  const args = ['template', releaseName, chartDir, '--namespace', namespace];
  args.push('--kube-version', options.kubeVersion ?? '1.33.0');
  for (const file of options.values ?? []) args.push('-f', file);
  for (const [key, value] of Object.entries(options.set ?? {})) {
    args.push(typeof value === 'string' ? '--set-string' : '--set', `${key}=${value}`);
  }
  for (const api of options.apiVersions ?? []) args.push('--api-versions', api);
  return args;
}

/** `helm template` as text; throws with helm's message when rendering fails. */
export function renderText(options: RenderOptions = {}): string {
  const result = run(helmBin!, templateArgs(options));
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return result.stdout;
}

/** `helm template` expected to fail: returns helm's error output. */
export function renderError(options: RenderOptions): string {
  const result = run(helmBin!, templateArgs(options));
  if (result.status === 0) throw new Error('helm template succeeded but was expected to fail');
  return result.stderr;
}

// The few manifest fields the specs read, typed loosely: the renders are checked against the
// real Kubernetes schemas by kubeconform, these types only keep the specs readable.
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
export interface Container {
  name: string;
  image: string;
  args?: string[];
  env: EnvVar[];
  ports: { name: string; containerPort: number }[];
  resources: unknown;
  livenessProbe: unknown;
  readinessProbe: unknown;
  securityContext: unknown;
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
export interface Volume {
  name: string;
  configMap?: { name: string };
  persistentVolumeClaim?: { claimName: string };
  emptyDir?: { sizeLimit?: string };
}
export interface PodTemplate {
  metadata: { annotations: Record<string, string>; labels: Record<string, string> };
  spec: {
    containers: Container[];
    securityContext: unknown;
    volumes: Volume[];
    [field: string]: unknown;
  };
}
export interface Deployment extends Manifest {
  spec: {
    replicas?: number;
    strategy: { type: string };
    selector: { matchLabels: Record<string, string> };
    template: PodTemplate;
  };
}

/** Parses a multi-document render into objects, dropping empty documents. */
export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`bad YAML: ${doc.errors[0]!.message}`);
      return doc.toJS() as Manifest | null;
    })
    .filter((doc): doc is Manifest => doc !== null);
}

export const render = (options: RenderOptions = {}): Manifest[] =>
  parseManifests(renderText(options));

export function allOfKind<T extends Manifest = Manifest>(docs: Manifest[], kind: string): T[] {
  return docs.filter((doc) => doc.kind === kind) as T[];
}

/** The single manifest of a kind (and name suffix); throws when there is none or several. */
export function oneOfKind<T extends Manifest = Manifest>(
  docs: Manifest[],
  kind: string,
  nameSuffix = '',
): T {
  const found = allOfKind<T>(docs, kind).filter((doc) => doc.metadata.name.endsWith(nameSuffix));
  if (found.length !== 1) {
    throw new Error(`expected one ${kind}*${nameSuffix}, found ${found.length}`);
  }
  return found[0]!;
}

export const appContainer = (deployment: Deployment): Container =>
  deployment.spec.template.spec.containers.find((c) => c.name === 'plant-store')!;

export const envOf = (container: Container, name: string): EnvVar | undefined =>
  container.env.find((e) => e.name === name);

const sha = (digit: string) => `sha256:${digit.repeat(64)}`;
/** The fewest values that deploy the relay server: one agent, one client of it. */
export const minimalRelay = {
  'relayServer.enabled': true,
  'relayServer.agents.shop[0]': sha('1'),
  'relayServer.clients.alice.tokens[0]': sha('2'),
  'relayServer.clients.alice.agents[0]': 'shop',
};
