import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { parse } from 'yaml';
import { createTestCa, type TestCa } from './fixtures/agent-server/test-ca.js';
import { echoServer, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  firstText,
  shopAgentEnv,
  startShopRelay,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, ROOT, type RunningApp, startApp } from './support/app-process.js';
import { lintDashboard, queriesOf, readDashboard } from './support/dashboard-check.js';
import { call } from './support/http.js';
import { type Exported, mergeExported, parseExposition } from './support/metrics-scrape.js';
import { checkPromql } from './support/promql-check.js';
import type { RunningRelay } from './support/relay-process.js';
import { fetchTrusting } from './support/tls-fetch.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/**
 * The Grafana dashboards (helm/plant-store/dashboards/) and the Prometheus rules file against
 * what the built service and relay server export: one relay, the service as its agent with an
 * MCP server and a webhook receiver, traffic through each, and a refusal of each kind that is
 * cheap to cause, so their series exist; then every query must parse and name only exported
 * series and labels.
 */
const CHART = join(ROOT, 'helm/plant-store');
const RULES = join(CHART, 'prometheus/plant-store-rules.yaml');
const agentToken = newToken();
const clientToken = newToken();

let ca: TestCa;
let receiver: WebhookReceiver;
let relay: RunningRelay;
let app: RunningApp;
let service: Exported;
let relayServer: Exported;

const scrape = async (metricsUrl: string) =>
  parseExposition(await (await fetch(`${metricsUrl}/metrics`)).text());

beforeAll(async () => {
  ca = createTestCa();
  receiver = await new WebhookReceiver().listen();
  relay = await startShopRelay(ca.dir, agentToken, clientToken);
  app = await startApp({
    env: {
      ...shopAgentEnv(relay, ca.caFile, agentToken),
      WEBHOOK_URLS: receiver.url,
      WEBHOOK_SECRETS: receiver.secret,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      MAX_CONNECTIONS_PER_ADDRESS: '4',
    },
    mcpServers: { mcpServers: { echo: echoServer() } },
  });
  await untilShopServersUp(relay, ['echo']);
  await causeTraffic();
  await causeRefusals();
  service = await scrape(app.metricsUrl);
  relayServer = await scrape(relay.metricsUrl);
});

afterAll(async () => {
  await app?.stop();
  await relay?.stop();
  await receiver?.close();
});

/** A tool call through the relay, a plant with its webhook delivery, a refused token. */
async function causeTraffic(): Promise<void> {
  const tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
  const mcp = await connectMcp(
    `https://localhost:${relay.port}/mcp/shop/echo`,
    clientToken,
    tlsFetch,
  );
  const echoed = await mcp.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  expect(firstText(echoed)).toContain('hi');
  await mcp.close();
  const created = await call(`${app.apiUrl}/plants`, {
    method: 'POST',
    token: app.token,
    body: '{"id": 1, "name": "fern"}',
  });
  expect(created.status).toBe(200);
  expect((await call(`${app.apiUrl}/plants/1`, { token: 'x'.repeat(32) })).status).toBe(401);
  await waitFor(() => receiver.deliveries.length > 0, 'the webhook delivery');
  // The backlog gauges are refreshed every few seconds, not on each notice.
  await waitFor(async () => has(app, 'webhook_pending_notices{'), 'the webhook backlog gauges');
}

/** One agent with a wrong token, one TLS handshake that fails, connections over a cap. */
async function causeRefusals(): Promise<void> {
  const agent = new WebSocket(`wss://localhost:${relay.port}/agent/v1/connect`, {
    headers: { Authorization: `Bearer ${newToken()}` },
    ca: readFileSync(ca.caFile),
  });
  agent.on('error', () => undefined);
  const garbage = connect({ port: relay.port, host: '127.0.0.1' }, () =>
    garbage.end('hello\r\n\r\n'),
  );
  garbage.on('error', () => undefined);
  const port = Number(new URL(app.apiUrl).port);
  const sockets: Socket[] = Array.from({ length: 6 }, () =>
    connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' }).on('error', () => undefined),
  );
  await waitFor(async () => has(relay, 'relay_agent_rejections_total{'), 'the agent refused');
  await waitFor(async () => has(relay, 'relay_connections_refused_total{'), 'the TLS refusal');
  await waitFor(async () => has(app, 'http_connections_refused_total{'), 'the connection refusal');
  agent.terminate();
  for (const socket of sockets) socket.destroy();
}

async function has(process: { metricsUrl: string }, prefix: string): Promise<boolean> {
  const text = await (await fetch(`${process.metricsUrl}/metrics`)).text();
  return text.split('\n').some((line) => line.startsWith(prefix));
}

const dashboards = [
  { file: 'plant-store.json', exported: () => service },
  { file: 'relay-server.json', exported: () => relayServer },
];

describe.each(dashboards)('dashboard $file', ({ file, exported }) => {
  const dashboard = readDashboard(join(CHART, 'dashboards', file));

  it('has queries, each parsing and naming only series and labels its process exports', () => {
    const queries = queriesOf(dashboard);
    expect(queries.length).toBeGreaterThan(10);
    const problems = queries.flatMap(({ where, expr }) =>
      checkPromql(expr, { exported: exported() }).map((p) => `${where}: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  it('passes the linter rules: datasource variable, job and instance variables, units', () => {
    expect(lintDashboard(dashboard)).toEqual([]);
  });
});

describe('series added for the dashboards', () => {
  it('counts open MCP sessions by agent (relay_mcp_sessions), 0 once they end', async () => {
    const sessions = () => metric(relay.metricsUrl, 'relay_mcp_sessions{agent="shop"}');
    expect(await sessions()).toBe(0);
    const tlsFetch = fetchTrusting(readFileSync(ca.caFile, 'utf8'));
    const url = `https://localhost:${relay.port}/mcp/shop/echo`;
    const mcp = await connectMcp(url, clientToken, tlsFetch);
    expect(await sessions()).toBe(1);
    await mcp.close();
    expect(await sessions()).toBe(0);
  });
});

describe('the Prometheus rules file', () => {
  it('has expressions that parse and name only exported series', () => {
    const file = parse(readFileSync(RULES, 'utf8')) as {
      groups: { rules: { record?: string; alert?: string; expr: string }[] }[];
    };
    const rules = file.groups.flatMap((group) => group.rules);
    const recorded = new Set(rules.flatMap((rule) => (rule.record ? [rule.record] : [])));
    const exported = mergeExported(service, relayServer);
    const problems = rules.flatMap((rule) =>
      checkPromql(String(rule.expr), { exported, recorded }).map(
        (p) => `${rule.alert ?? rule.record}: ${p}`,
      ),
    );
    expect(rules.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });
});

describe('the check itself', () => {
  it('refuses a syntax error, an unknown series and a label the series does not carry', () => {
    const check = (expr: string) => checkPromql(expr, { exported: service });
    expect(check('sum(rate(http_requests_total[5m])')).not.toEqual([]);
    expect(check('rate(http_request_total[5m])')).toEqual([
      'names http_request_total, which no process exports',
    ]);
    expect(check('sum by (path) (rate(http_requests_total{route="/plants"}[5m]))')).toEqual([
      'groups by path, which none of its series carries',
    ]);
    expect(check('db_up{server="echo"}')).toEqual([
      'matches label server, which db_up does not carry',
    ]);
    expect(check('sum by (le) (rate(store_commit_batch_size_bucket[5m]))')).toEqual([]);
  });

  it('refuses a dashboard with a fixed data source, instance or window', () => {
    const dashboard = readDashboard(join(CHART, 'dashboards', 'plant-store.json'));
    const panel = dashboard.panels.find((p) => p.targets?.length)!;
    panel.datasource = { uid: 'prometheus' };
    panel.targets![0]!.expr = 'rate(db_up{job=~"$job", instance="10.0.0.1:9090"}[5m])';
    expect(lintDashboard(dashboard)).toEqual([
      `panel ${panel.title}: a data source other than \${datasource}`,
      `${panel.title}: window [5m] instead of [$__rate_interval]`,
      `${panel.title}: db_up not filtered by instance=~"$instance"`,
    ]);
  });
});
