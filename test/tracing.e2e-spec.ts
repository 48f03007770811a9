import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logLines, metric, waitFor } from './fixtures/mcp-e2e-support.js';
import {
  connectMcp,
  firstText,
  relayFixtureServer,
  type ShopPath,
  startShopPath,
  stopShopPath,
  untilShopServersUp,
} from './fixtures/relay-e2e-support.js';
import { newToken, type RunningApp, startApp, tempDir } from './support/app-process.js';
import { closedPort } from './support/closed-port.js';
import { call } from './support/http.js';
import { OtlpReceiver, type ReceivedSpan, tracingEnv } from './support/otlp-receiver.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/**
 * OpenTelemetry tracing in the built bundles, exported to a real OTLP/HTTP receiver: an MCP
 * tool call through the relay is one trace from the relay to the MCP server, a created plant's
 * webhook delivery continues the POST's trace, and without OTEL_* variables the SDK is never
 * loaded. One relay (OpenTelemetry's default protocol, http/protobuf) and one traced agent
 * (http/json; it also serves the plant API) for the file.
 */
const REGISTER = resolve(import.meta.dirname, 'fixtures/module-log/register.mjs');
const agentToken = newToken();
const clientToken = newToken();

let otlp: OtlpReceiver;
let webhook: WebhookReceiver;
let path: Partial<ShopPath> = {};
let modulesLoaded: string;
const webhookTraceparents: string[] = [];

const SERVER = 2;
const CLIENT = 3;

/** A caller's own span, sent as `traceparent`: what the process must continue. */
function callerSpan() {
  const caller = {
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
  };
  return { ...caller, traceparent: `00-${caller.traceId}-${caller.spanId}-01` };
}

/** The trace id and parent id of a W3C traceparent. */
function parse(traceparent: string): { traceId: string; parentId: string } {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traceparent);
  if (!match) throw new Error(`not a sampled W3C traceparent: "${traceparent}"`);
  return { traceId: match[1]!, parentId: match[2]! };
}

/** Waits for the span `spanId` of `traceId` at the receiver. */
function spanOf(traceId: string, spanId: string, what: string): Promise<ReceivedSpan> {
  return waitFor(
    () => otlp.spans.find((s) => s.traceId === traceId && s.spanId === spanId),
    what,
    10_000,
  );
}

const withHeader =
  (fetcher: typeof fetch, name: string, value: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set(name, value);
    return fetcher(input, { ...init, headers });
  };

beforeAll(async () => {
  otlp = await new OtlpReceiver().listen();
  webhook = await new WebhookReceiver().listen();
  webhook.behaviour = (request, response) => {
    webhookTraceparents.push(String(request.headers.traceparent ?? ''));
    response.writeHead(200).end();
  };
  modulesLoaded = join(tempDir('modules'), 'traced.txt');
  path = await startShopPath({ fixture: relayFixtureServer() }, agentToken, clientToken, {
    relay: tracingEnv(otlp, 'relay-under-test'),
    app: {
      ...tracingEnv(otlp, 'agent-under-test', 'http/json'),
      WEBHOOK_URLS: webhook.url,
      WEBHOOK_SECRETS: webhook.secret,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
      NODE_OPTIONS: `--import ${REGISTER}`,
      MODULE_LOG_FILE: modulesLoaded,
    },
  });
  await untilShopServersUp(path.relay!, ['fixture']);
});

afterAll(async () => {
  await stopShopPath(path);
  await otlp?.close();
  await webhook?.close();
});

describe('tracing', () => {
  it('makes one MCP tool call one trace: relay request, frame to the agent, MCP server', async () => {
    const caller = callerSpan();
    const url = `https://localhost:${path.relay!.port}/mcp/shop/fixture`;
    const fetcher = withHeader(path.tlsFetch!, 'traceparent', caller.traceparent);
    const mcp = await connectMcp(url, clientToken, fetcher, 'tracing-e2e');
    let seen: string;
    try {
      seen = firstText(await mcp.client.callTool({ name: 'traceparent', arguments: {} }));
    } finally {
      await mcp.close();
    }
    // The MCP server got `_meta.traceparent` of the caller's trace; its parent is the agent's span.
    const atServer = parse(seen);
    expect(atServer.traceId).toBe(caller.traceId);
    const agent = await spanOf(caller.traceId, atServer.parentId, "the agent's span");
    expect(agent).toMatchObject({
      service: 'agent-under-test',
      name: 'tools/call traceparent',
      kind: CLIENT,
      attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'traceparent' },
    });
    const toAgent = await spanOf(caller.traceId, agent.parentSpanId, "the relay's frame span");
    expect(toAgent).toMatchObject({
      service: 'relay-under-test',
      name: 'tools/call traceparent',
      kind: CLIENT,
      attributes: { 'plant_store.agent': 'shop', 'plant_store.mcp_server': 'fixture' },
    });
    const request = await spanOf(caller.traceId, toAgent.parentSpanId, "the relay's request span");
    expect(request).toMatchObject({
      service: 'relay-under-test',
      kind: SERVER,
      parentSpanId: caller.spanId,
      attributes: { 'http.request.method': 'POST', 'http.response.status_code': 200 },
    });
    expect(request.name).toBe(`POST ${String(request.attributes['http.route'])}`);
    // The relay spoke protobuf without being told, the agent JSON as told.
    expect(new Set(otlp.contentTypes)).toEqual(
      new Set(['application/x-protobuf', 'application/json']),
    );
    // Neither token is in any span.
    const exported = JSON.stringify(otlp.spans);
    expect(exported).not.toContain(clientToken);
    expect(exported).not.toContain(agentToken);
  });

  it("continues a client's _meta.traceparent (SEP-414), linked to the HTTP request's span", async () => {
    const header = callerSpan();
    const inMeta = callerSpan();
    const url = `https://localhost:${path.relay!.port}/mcp/shop/fixture`;
    const fetcher = withHeader(path.tlsFetch!, 'traceparent', header.traceparent);
    const mcp = await connectMcp(url, clientToken, fetcher, 'tracing-e2e-meta');
    let seen: string;
    try {
      const result = await mcp.client.callTool({
        name: 'traceparent',
        arguments: {},
        _meta: { traceparent: inMeta.traceparent },
      });
      seen = firstText(result);
    } finally {
      await mcp.close();
    }
    const atServer = parse(seen);
    expect(atServer.traceId).toBe(inMeta.traceId);
    const agent = await spanOf(inMeta.traceId, atServer.parentId, "the agent's span");
    const toAgent = await spanOf(inMeta.traceId, agent.parentSpanId, "the relay's frame span");
    expect(toAgent).toMatchObject({ service: 'relay-under-test', parentSpanId: inMeta.spanId });
    // The link leads to the relay's HTTP span, in the header's trace.
    expect(toAgent.links).toHaveLength(1);
    const request = await spanOf(header.traceId, toAgent.links[0]!.spanId, 'the HTTP span');
    expect(request).toMatchObject({ kind: SERVER, parentSpanId: header.spanId });
  });

  it("continues a plant POST's trace in the store commit and the webhook delivery", async () => {
    const caller = callerSpan();
    const app = path.app!;
    const created = await call(`${app.apiUrl}/plants`, {
      method: 'POST',
      token: app.token,
      body: '{"id": 27, "name": "traced"}',
      headers: { traceparent: caller.traceparent },
    });
    expect(created.status).toBe(200);
    const header = await waitFor(() => webhookTraceparents[0], 'the webhook delivery', 10_000);
    // The receiver got the delivery attempt's span as traceparent, in the POST's trace.
    const atReceiver = parse(header);
    expect(atReceiver.traceId).toBe(caller.traceId);
    const attempt = await spanOf(caller.traceId, atReceiver.parentId, 'the attempt span');
    expect(attempt).toMatchObject({
      service: 'agent-under-test',
      name: 'POST',
      kind: CLIENT,
      attributes: { 'plant_store.webhook.outcome': 'delivered', 'http.response.status_code': 200 },
    });
    const post = await spanOf(caller.traceId, attempt.parentSpanId, 'the API span');
    expect(post).toMatchObject({
      name: 'POST /plants',
      kind: SERVER,
      parentSpanId: caller.spanId,
      attributes: { 'http.route': '/plants', 'http.response.status_code': 200 },
    });
    const commit = await waitFor(
      () => otlp.spans.find((s) => s.name === 'plants commit' && s.parentSpanId === post.spanId),
      'the commit span',
    );
    expect(commit.attributes['db.operation.batch.size']).toBe(1);
    // Nothing dropped: the collector keeps up. The metric exists only while tracing is on.
    for (const reason of ['queue_full', 'export_failed']) {
      expect(await metric(app.metricsUrl, `otel_spans_dropped_total{reason="${reason}"}`)).toBe(0);
    }
    // The request's log line carries the ids of its span.
    await waitFor(
      () =>
        logLines(app.output(), (l) => l.msg === 'request' && l.route === '/plants').find(
          (l) => l.trace_id === caller.traceId && l.span_id === post.spanId,
        ),
      'the request line with its span',
    );
  });

  describe('a collector that fails or hangs', () => {
    let collector: OtlpReceiver;
    let app: RunningApp | undefined;
    beforeAll(async () => {
      collector = await new OtlpReceiver().listen();
    });
    afterAll(async () => {
      await app?.stop();
      await collector.close();
    });
    const createPlant = (id: number) =>
      call(`${app!.apiUrl}/plants`, {
        method: 'POST',
        token: app!.token,
        body: `{"id": ${id}, "name": "lost span"}`,
      });

    it('counts the spans of a failed export as dropped, reason export_failed', async () => {
      collector.behaviour = 'fail';
      app = await startApp({ env: tracingEnv(collector, 'failing-collector') });
      expect((await createPlant(1)).status).toBe(200);
      await expect
        .poll(() => metric(app!.metricsUrl, 'otel_spans_dropped_total{reason="export_failed"}'), {
          timeout: 10_000,
        })
        .toBeGreaterThanOrEqual(2);
      expect(await metric(app.metricsUrl, 'otel_spans_dropped_total{reason="queue_full"}')).toBe(0);
      await app.stop();
      app = undefined;
    });

    it('warns of unknown values, says where it exports, then logs and counts failed exports', async () => {
      const secret = newToken();
      const port = await closedPort();
      app = await startApp({
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://user:${secret}@127.0.0.1:${port}/?key=${secret}`,
          OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${secret}`,
          OTEL_BSP_SCHEDULE_DELAY: '100',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'bogus',
          OTEL_TRACES_SAMPLER: 'bogus',
        },
      });
      // Values OpenTelemetry does not know: its own warning, then its default.
      const unknown = logLines(app.output(), (l) => String(l.msg).includes('bogus'));
      expect(unknown.map((l) => [l.level, l.msg])).toEqual(
        expect.arrayContaining([
          [40, 'opentelemetry: Unsupported OTLP traces protocol: bogus. Using http/protobuf.'],
          [40, 'opentelemetry: unknown OTEL_TRACES_SAMPLER value "bogus", using default'],
        ]),
      );
      expect(unknown.every((l) => l.level === 40)).toBe(true);
      const on = logLines(app.output(), (l) => l.msg === 'tracing on');
      expect(on).toEqual([
        expect.objectContaining({
          protocol: 'http/protobuf',
          endpoint: `http://127.0.0.1:${port}/v1/traces`,
        }),
      ]);
      expect((await createPlant(4)).status).toBe(200);
      await expect
        .poll(() => metric(app!.metricsUrl, 'otel_spans_dropped_total{reason="export_failed"}'), {
          timeout: 10_000,
        })
        .toBeGreaterThanOrEqual(1);
      const failedLines = () =>
        logLines(app!.output(), (l) => String(l.msg).startsWith('tracing: an export failed'));
      const failed = await waitFor(() => failedLines().length > 0 && failedLines(), 'the line');
      expect(failed).toHaveLength(1);
      expect(failed[0]?.reason).toBe('export_failed');
      expect(failed[0]?.error).toMatch(/ECONNREFUSED/);
      await app.stop();
      expect(app.output()).not.toContain(secret);
      app = undefined;
    });

    it('stops within TRACING_SHUTDOWN_TIMEOUT_SECONDS when the collector never answers', async () => {
      collector.behaviour = 'hang';
      app = await startApp({ env: tracingEnv(collector, 'hanging-collector') });
      const exportsBefore = collector.exports;
      expect((await createPlant(2)).status).toBe(200);
      // An export is stuck at the collector (the exporter's own timeout is 10 s).
      await expect
        .poll(() => collector.exports, { timeout: 10_000 })
        .toBeGreaterThan(exportsBefore);
      expect((await createPlant(3)).status).toBe(200);
      const started = performance.now();
      expect(await app.stop()).toBe(0);
      // The default bound is 2 s; the hung export alone would hold the exit for 10 s.
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(app.output()).toMatch(/"spans":[1-9]\d*[^\n]*tracing: spans not sent at shutdown/);
      app = undefined;
    });
  });

  describe('off', () => {
    let app: RunningApp | undefined;
    afterAll(() => app?.stop());

    it('loads no OpenTelemetry module and writes no trace ids without OTEL_* variables', async () => {
      const untraced = join(tempDir('modules'), 'untraced.txt');
      app = await startApp({
        env: { NODE_OPTIONS: `--import ${REGISTER}`, MODULE_LOG_FILE: untraced },
      });
      const caller = callerSpan();
      const created = await call(`${app.apiUrl}/plants`, {
        method: 'POST',
        token: app.token,
        body: '{"id": 1, "name": "untraced"}',
        headers: { traceparent: caller.traceparent },
      });
      expect(created.status).toBe(200);
      const bundled = (file: string) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((url) => url.includes('/dist/bundle/'))
          .map((url) => url.slice(url.lastIndexOf('/') + 1));
      // The bundle's chunks read only when used: tracing's SDK, undici for webhook receivers, the
      // MCP servers' runner. The traced agent has all three; this process none of them.
      const lazy = (files: string[]) =>
        [
          ...new Set(
            files.filter((file) => /^(otel|undici|mcp-server-runner)-\w+\.js$/.test(file)),
          ),
        ].sort();
      expect(
        lazy(bundled(modulesLoaded)).map((file) => file.split('-').slice(0, -1).join('-')),
      ).toEqual(['mcp-server-runner', 'otel', 'undici']);
      expect(bundled(untraced)).toContain('main.js');
      expect(lazy(bundled(untraced))).toEqual([]);
      await waitFor(() => logLines(app!.output(), (l) => l.msg === 'request').length > 0, 'a line');
      expect(app.output()).not.toContain('trace_id');
      expect(await metric(app.metricsUrl, 'otel_spans_dropped_total')).toBeUndefined();
    });
  });
});
