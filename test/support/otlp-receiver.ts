import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtobufExport } from './otlp-protobuf.js';

/** One span as an OTLP/HTTP export carried it, with the service that sent it. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  status: { code?: number; message?: string };
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}
interface ExportRequest {
  resourceSpans: {
    resource: { attributes: KeyValue[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

/**
 * A real OTLP/HTTP receiver on loopback, both encodings of the OTLP specification (protobuf
 * and JSON): it decodes every POST /v1/traces and keeps the spans, as a collector would.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** The content type of each export decoded. */
  readonly contentTypes: string[] = [];
  /** Exports received, answered or not. */
  exports = 0;
  /** `fail`: every export answered 400 (not retried); `hang`: never answered, as a stuck collector. */
  behaviour: 'accept' | 'fail' | 'hang' = 'accept';
  private readonly server: Server;

  constructor() {
    this.server = createServer((request, response) => {
      this.exports++;
      if (this.behaviour === 'hang') return;
      if (this.behaviour === 'fail') {
        response.writeHead(400, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = request.url === '/v1/traces' ? decode(request, Buffer.concat(chunks)) : null;
        if (!body) {
          response.writeHead(415).end();
          return;
        }
        this.contentTypes.push(String(request.headers['content-type']));
        this.spans.push(...spansOf(body));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** OTEL_EXPORTER_OTLP_ENDPOINT: the exporter adds /v1/traces. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The environment that turns tracing on towards `receiver`, sending spans every 100 ms, over
 * `protocol` (OpenTelemetry's default, http/protobuf, when not given).
 */
export function tracingEnv(
  receiver: OtlpReceiver,
  serviceName: string,
  protocol?: 'http/json' | 'http/protobuf',
): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_SERVICE_NAME: serviceName,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...(protocol ? { OTEL_EXPORTER_OTLP_PROTOCOL: protocol } : {}),
  };
}

function decode(request: IncomingMessage, body: Buffer): ExportRequest | null {
  const type = request.headers['content-type'];
  if (type === 'application/json') return JSON.parse(body.toString('utf8')) as ExportRequest;
  if (type === 'application/x-protobuf') return decodeProtobufExport(body) as ExportRequest;
  return null;
}

function spansOf(body: ExportRequest): ReceivedSpan[] {
  return body.resourceSpans.flatMap(({ resource, scopeSpans }) => {
    const service = String(attributesOf(resource.attributes)['service.name']);
    return scopeSpans.flatMap(({ spans }) =>
      spans.map((span) => ({
        service,
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: span.parentSpanId ? hex(span.parentSpanId) : '',
        name: span.name,
        kind: span.kind,
        attributes: attributesOf(span.attributes ?? []),
        links: (span.links ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
        status: span.status ?? {},
      })),
    );
  });
}

function attributesOf(list: KeyValue[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list) {
    out[key] =
      value.stringValue ??
      value.boolValue ??
      value.doubleValue ??
      (value.intValue !== undefined ? Number(value.intValue) : '');
  }
  return out;
}

/** OTLP JSON ids are hex; base64 (protobuf's JSON mapping) is accepted too. */
function hex(id: string): string {
  return /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex');
}
