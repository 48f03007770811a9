/**
 * helm lint --strict on every value set, and kubeconform -strict on every render for the oldest
 * supported Kubernetes (1.19) and a current one, against offline schemas: an unknown field, an
 * API version the cluster does not serve or a kind without a schema fails.
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  chartDir,
  ciValueFiles,
  helmBin,
  helmMissing,
  kubeconformBin,
  kubeconformMissing,
  kubeVersions,
  parseManifests,
  renderText,
  run,
  schemaDir,
  skipWhenMissing,
} from './helm-tools.js';

const valueSets = ciValueFiles.map((file) => [path.basename(file), file] as const);

describe.skipIf(skipWhenMissing(helmMissing))(
  `helm lint --strict${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (helmMissing) throw new Error(helmMissing);
    });

    it('has a value set for each variant the issue names', () => {
      expect(valueSets.map(([name]) => name)).toEqual(
        expect.arrayContaining([
          'default-values.yaml',
          'external-db-values.yaml',
          'autoscaling-off-values.yaml',
          'monitoring-ingress-values.yaml',
        ]),
      );
    });

    it.each(valueSets)('passes with %s', (_name, file) => {
      const result = run(helmBin!, ['lint', '--strict', chartDir, '-f', file]);
      expect(result.status, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain('0 chart(s) failed');
    });
  },
);

interface KubeconformReport {
  resources: { kind: string; name: string; version: string; status: string; msg: string }[];
}

describe.skipIf(skipWhenMissing(kubeconformMissing))(
  `kubeconform -strict${kubeconformMissing ? ` (skipped: ${kubeconformMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (kubeconformMissing) throw new Error(kubeconformMissing);
    });

    const matrix = valueSets.flatMap(([name, file]) =>
      kubeVersions.map((kubeVersion) => [name, kubeVersion, file] as const),
    );

    it.each(matrix)('accepts %s on Kubernetes %s', (_name, kubeVersion, file) => {
      const manifests = renderText({ values: [file], kubeVersion });
      const kinds = parseManifests(manifests).map((m) => m.kind);
      const result = run(
        kubeconformBin!,
        [
          '-strict',
          '-verbose',
          '-output',
          'json',
          // The Prometheus Operator's CRDs have no schema in the Kubernetes set: skipped by name.
          '-skip',
          'ServiceMonitor,PrometheusRule',
          '-schema-location',
          `${schemaDir(kubeVersion)}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
        ],
        manifests,
      );
      expect(result.status, result.stdout + result.stderr).toBe(0);
      const report = JSON.parse(result.stdout) as KubeconformReport;
      // Every rendered object was checked: valid, or skipped only if it is an operator CRD's.
      expect(report.resources).toHaveLength(kinds.length);
      const operatorKinds = ['ServiceMonitor', 'PrometheusRule'];
      for (const resource of report.resources) {
        const expected = operatorKinds.includes(resource.kind) ? 'statusSkipped' : 'statusValid';
        expect(resource.status, `${resource.kind} ${resource.name}: ${resource.msg}`).toBe(
          expected,
        );
      }
    });

    it('rejects an unknown field (the schemas are strict and offline)', () => {
      const bad = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  bogus: 1\n';
      for (const kubeVersion of kubeVersions) {
        const result = run(
          kubeconformBin!,
          [
            '-strict',
            '-schema-location',
            `${schemaDir(kubeVersion)}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
          ],
          bad,
        );
        expect(result.status).not.toBe(0);
        expect(result.stdout).toContain("additional properties 'bogus' not allowed");
      }
    });
  },
);
