import protobuf from 'protobufjs';

/**
 * The part of OTLP's trace schema (opentelemetry-proto, trace/v1) the tests read, for
 * protobufjs: an http/protobuf export decodes to the same shape as the JSON encoding.
 */
const SCHEMA = `
syntax = "proto3";
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { repeated Span spans = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  repeated KeyValue attributes = 9;
  repeated Link links = 13;
  Status status = 15;
}
message Link { bytes trace_id = 1; bytes span_id = 2; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
  }
}
`;

const request = protobuf.parse(SCHEMA).root.lookupType('ExportTraceServiceRequest');

/** The export request in `body`, as OTLP's JSON encoding spells it (ids in base64). */
export function decodeProtobufExport(body: Buffer): unknown {
  return request.toObject(request.decode(body), { longs: String, bytes: String, arrays: true });
}
