/**
 * The Prometheus rules the chart ships (helm/plant-store/prometheus/plant-store-rules.yaml):
 * `promtool check rules` accepts them, `promtool test rules` passes their unit tests
 * (test/prometheus/plant-store-rules.test.yaml), and every alert has a case where it fires and
 * one where it stays silent. promtool comes from .ci/install-promtool.sh; outside CI a missing
 * promtool skips these specs with the reason, in CI it fails them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { chartDir, promtoolBin, promtoolMissing, run, skipWhenMissing } from './helm-tools.js';

const rulesFile = path.join(chartDir, 'prometheus', 'plant-store-rules.yaml');
const testsFile = path.resolve(import.meta.dirname, '../prometheus/plant-store-rules.test.yaml');

interface RulesFile {
  groups: { name: string; rules: { alert?: string; record?: string }[] }[];
}
interface TestsFile {
  tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
}

const alertNames = (): string[] =>
  (parse(readFileSync(rulesFile, 'utf8')) as RulesFile).groups.flatMap((group) =>
    group.rules.flatMap((rule) => (rule.alert ? [rule.alert] : [])),
  );

describe.skipIf(skipWhenMissing(promtoolMissing))(
  `Prometheus rules${promtoolMissing ? ` (skipped: ${promtoolMissing})` : ''}`,
  () => {
    beforeAll(() => {
      if (promtoolMissing) throw new Error(promtoolMissing);
    });

    it('pass promtool check rules', () => {
      const result = run(promtoolBin!, ['check', 'rules', rulesFile]);
      expect(result.status, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toMatch(/SUCCESS: \d+ rules found/);
    });

    it('pass their unit tests (promtool test rules)', () => {
      const result = run(promtoolBin!, ['test', 'rules', testsFile]);
      expect(result.status, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain('SUCCESS');
    });
  },
);

describe('Prometheus rules unit tests', () => {
  it('have a firing case and a silent case for every alert', () => {
    const tests = (parse(readFileSync(testsFile, 'utf8')) as TestsFile).tests.flatMap(
      (test) => test.alert_rule_test ?? [],
    );
    const names = alertNames();
    expect(names.length).toBeGreaterThanOrEqual(12);
    for (const name of names) {
      const cases = tests.filter((test) => test.alertname === name);
      expect(
        cases.some((test) => (test.exp_alerts ?? []).length > 0),
        `${name} fires`,
      ).toBe(true);
      expect(
        cases.some((test) => (test.exp_alerts ?? []).length === 0),
        `${name} stays silent`,
      ).toBe(true);
    }
  });

  it('give every alert a severity, a summary, a description and its runbook section', () => {
    const rules = (parse(readFileSync(rulesFile, 'utf8')) as RulesFile).groups.flatMap(
      (group) => group.rules,
    ) as {
      alert?: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    }[];
    const runbooks = readFileSync(path.resolve(chartDir, '../../docs/operations.md'), 'utf8');
    for (const rule of rules.filter((r) => r.alert)) {
      const name = rule.alert!;
      expect(['critical', 'warning'], name).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, name).toBeTruthy();
      expect(rule.annotations?.description, name).toMatch(/\{\{ \$labels\.\w+ \}\}/);
      expect(rule.annotations?.runbook_url, name).toBe(`docs/operations.md#${name.toLowerCase()}`);
      expect(runbooks, `docs/operations.md has a "### ${name}" section`).toMatch(
        new RegExp(`^### ${name}$`, 'm'),
      );
    }
  });
});
