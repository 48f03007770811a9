/**
 * The chart's PrometheusRule (prometheusRule.*, off by default): rendered only when enabled and
 * the Prometheus Operator's API is served (or forced), carrying the groups of
 * prometheus/plant-store-rules.yaml unchanged but for the runbook address, with the agent's
 * group only when the agent connects to a relay server and the relay's only with the relay.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  allOfKind,
  chartDir,
  helmMissing,
  type Manifest,
  oneOfKind,
  render,
  skipWhenMissing,
} from './helm-tools.js';

const ruleApi = 'monitoring.coreos.com/v1/PrometheusRule';
const enabled = { 'prometheusRule.enabled': true };
const relay = {
  'relayServer.enabled': true,
  'relayServer.agents.shop[0]': `sha256:${'1'.repeat(64)}`,
  'relayServer.clients.alice.tokens[0]': `sha256:${'2'.repeat(64)}`,
  'relayServer.clients.alice.agents[0]': 'shop',
};

interface Rule {
  alert?: string;
  record?: string;
  annotations?: Record<string, string>;
}
interface Group {
  name: string;
  rules: Rule[];
}
const fileGroups = (
  parse(readFileSync(path.join(chartDir, 'prometheus', 'plant-store-rules.yaml'), 'utf8')) as {
    groups: Group[];
  }
).groups;

const groupsOf = (docs: Manifest[]): Group[] =>
  (oneOfKind(docs, 'PrometheusRule').spec as { groups: Group[] }).groups;
const runbooks = (groups: Group[]): string[] =>
  groups.flatMap((g) => g.rules.flatMap((r) => r.annotations?.runbook_url ?? []));

describe.skipIf(skipWhenMissing(helmMissing))(
  `chart PrometheusRule${helmMissing ? ` (skipped: ${helmMissing})` : ''}`,
  () => {
    it('is off by default, and needs the operator API or force when enabled', () => {
      expect(allOfKind(render({ apiVersions: [ruleApi] }), 'PrometheusRule')).toEqual([]);
      expect(allOfKind(render({ set: enabled }), 'PrometheusRule')).toEqual([]);
      const served = oneOfKind(render({ set: enabled, apiVersions: [ruleApi] }), 'PrometheusRule');
      expect(served.apiVersion).toBe('monitoring.coreos.com/v1');
      const forced = render({
        set: { ...enabled, 'prometheusRule.force': true, 'prometheusRule.labels.release': 'kps' },
      });
      expect(oneOfKind(forced, 'PrometheusRule').metadata.labels).toMatchObject({
        release: 'kps',
        'app.kubernetes.io/instance': 'plants',
      });
    });

    it("ships the rules file's groups as they are, without the agent's and the relay's", () => {
      const groups = groupsOf(render({ set: enabled, apiVersions: [ruleApi] }));
      expect(groups.map((g) => g.name)).toEqual(['plant-store-slo', 'plant-store']);
      const expected = fileGroups.filter((g) => groups.some((s) => s.name === g.name));
      expect(groups).toEqual(expected);
    });

    it("adds the agent's group with agent.serverUrl and the relay's with the relay", () => {
      const withAgent = groupsOf(
        render({
          set: {
            ...enabled,
            'agent.serverUrl': 'https://relay.example.com',
            'agent.token': 'x'.repeat(32),
          },
          apiVersions: [ruleApi],
        }),
      );
      expect(withAgent.map((g) => g.name)).toEqual([
        'plant-store-slo',
        'plant-store',
        'plant-store-agent',
      ]);
      const withRelay = groupsOf(render({ set: { ...enabled, ...relay }, apiVersions: [ruleApi] }));
      expect(withRelay.map((g) => g.name)).toEqual([
        'plant-store-slo',
        'plant-store',
        'plant-store-relay',
      ]);
      expect(withRelay.at(-1)).toEqual(fileGroups.find((g) => g.name === 'plant-store-relay'));
    });

    it('points runbook_url at prometheusRule.runbookBaseUrl, or keeps the relative path', () => {
      const base = 'https://git.example.com/plant-store/blob/v1.1.0/docs/operations.md';
      const relative = runbooks(
        groupsOf(render({ set: { ...enabled, ...relay }, apiVersions: [ruleApi] })),
      );
      expect(relative.length).toBeGreaterThanOrEqual(11);
      for (const url of relative) expect(url).toMatch(/^docs\/operations\.md#plantstore[a-z]+$/);
      const absolute = runbooks(
        groupsOf(
          render({
            set: { ...enabled, ...relay, 'prometheusRule.runbookBaseUrl': base },
            apiVersions: [ruleApi],
          }),
        ),
      );
      expect(absolute).toEqual(relative.map((url) => url.replace('docs/operations.md', base)));
    });
  },
);
