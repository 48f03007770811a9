import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createTestCa } from './fixtures/agent-server/test-ca.js';
import { startShopRelay } from './fixtures/relay-e2e-support.js';
import { newToken, ROOT, type RunningApp, startApp } from './support/app-process.js';
import type { RunningRelay } from './support/relay-process.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/**
 * The alert rules (helm/plant-store/prometheus/plant-store-rules.yaml) name only metrics that
 * the built service (with a webhook receiver) and the built relay server export: a renamed metric fails here instead of leaving an alert that never fires.
 */
const RULES = join(ROOT, 'helm/plant-store/prometheus/plant-store-rules.yaml');
// PromQL words that look like metric names in an expression.
const PROMQL_WORDS = new Set(
  'sum max min avg count rate increase label_replace histogram_quantile or and unless by without on ignoring bool'.split(
    ' ',
  ),
);

/** Metric names in a PromQL expression: identifiers left once label matchers, grouping
 * clauses, strings and recorded series (`a:b:c`) are taken out. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '');
  const words = bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return words.filter((word) => !PROMQL_WORDS.has(word) && !word.includes(':'));
}

/** Sample names a scrape can have: every `# TYPE` line's name, with a histogram's series. */
async function exported(metricsUrl: string): Promise<string[]> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  return [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
    type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name!],
  );
}

describe('the alert rules against the running service and relay server', () => {
  let relay: RunningRelay;
  let app: RunningApp;
  let hook: WebhookReceiver;
  beforeAll(async () => {
    // Every metric is registered at start, series or not: no agent connection or MCP server
    // is needed, so the two processes start side by side.
    hook = await new WebhookReceiver().listen();
    [relay, app] = await Promise.all([
      startShopRelay(createTestCa().dir, newToken(), newToken()),
      startApp({ env: { WEBHOOK_URLS: hook.url, WEBHOOK_SECRETS: hook.secret } }),
    ]);
  });
  afterAll(async () => {
    await app?.stop();
    await relay?.stop();
    await hook?.close();
  });

  it('name only metrics that they export', async () => {
    const rules = (
      parse(readFileSync(RULES, 'utf8')) as { groups: { rules: { expr: string }[] }[] }
    ).groups.flatMap((group) => group.rules);
    const used = new Set(rules.flatMap((rule) => metricNames(rule.expr)));
    expect(used.size).toBeGreaterThan(10);
    const known = new Set([
      ...(await exported(app.metricsUrl)),
      ...(await exported(relay.metricsUrl)),
    ]);
    expect([...used].filter((name) => !known.has(name))).toEqual([]);
  });
});
