import {
  makeCounterProvider,
  makeGaugeProvider,
  makeHistogramProvider,
} from '@willsoto/nestjs-prometheus';

// Labels are configured names or fixed lists only, never tokens, pod or session ids or server
// names an agent chose, so cardinality stays bounded by the configuration.
export const relayMetricProviders = [
  makeGaugeProvider({
    name: 'relay_agent_connections',
    help: 'Open, greeted WebSocket connections per configured agent (one per pod).',
    labelNames: ['agent'],
  }),
  makeCounterProvider({
    name: 'relay_agent_rejections_total',
    help: 'Agent connections refused or dropped, by reason.',
    labelNames: ['reason'],
  }),
  makeCounterProvider({
    name: 'relay_mcp_requests_total',
    help: 'MCP requests relayed to agents, by agent and outcome.',
    labelNames: ['agent', 'outcome'],
  }),
  makeHistogramProvider({
    name: 'relay_mcp_request_duration_seconds',
    help: 'Time from a client request to the agent answer (or the relay error), by agent.',
    labelNames: ['agent'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  }),
  makeGaugeProvider({
    name: 'relay_mcp_requests_in_flight',
    help: 'MCP requests waiting for an agent answer, by agent.',
    labelNames: ['agent'],
  }),
  makeGaugeProvider({
    name: 'relay_mcp_event_streams',
    help: 'Open GET event streams of MCP client sessions, by agent.',
    labelNames: ['agent'],
  }),
  makeCounterProvider({
    name: 'relay_progress_dropped_total',
    help: "Progress notifications not written to a request's stream: its client is over its stream buffer budget (or the relay is), by agent.",
    labelNames: ['agent'],
  }),
  makeCounterProvider({
    name: 'relay_replay_dropped_total',
    help: "Events of a session's streams not kept for a resume, by agent and reason: past RELAY_STREAM_REPLAY_BYTES (bound) or a stream buffer budget (budget); resumes that missed some (resume).",
    labelNames: ['agent', 'reason'],
  }),
  makeCounterProvider({
    name: 'relay_event_streams_closed_total',
    help: 'GET and subscriptions/listen event streams closed because a message would pass a buffer budget: the stream (one frame), its client or the relay, by agent and budget.',
    labelNames: ['agent', 'budget'],
  }),
  makeCounterProvider({
    name: 'relay_unread_refusals_total',
    help: "MCP requests refused (429) while their client's answers and events wait unread past its budget or the relay's, by agent and budget.",
    labelNames: ['agent', 'budget'],
  }),
  makeCounterProvider({
    name: 'relay_server_notifications_dropped_total',
    help: 'MCP server notifications given to no client: progress for no waiting request of that server (no_request), a message that may be about any of several clients (unattributed).',
    labelNames: ['agent', 'reason'],
  }),
  makeCounterProvider({
    name: 'relay_connections_refused_total',
    help: 'Connections closed before any request: over a connection cap, or a TLS handshake that failed or timed out, by reason.',
    labelNames: ['reason'],
  }),
  makeCounterProvider({
    name: 'relay_origin_refusals_total',
    help: 'MCP requests refused (403) for a web Origin that is not allowed.',
  }),
  makeCounterProvider({
    name: 'relay_client_auth_failures_total',
    help: 'MCP client requests refused for a missing or unknown bearer token.',
  }),
  // OAuth: `reason` is one of RefusalReason's fixed values.
  makeCounterProvider({
    name: 'relay_oauth_refusals_total',
    help: 'MCP client requests refused by the OAuth checks (401, 403, 503), by reason.',
    labelNames: ['reason'],
  }),
  makeCounterProvider({
    name: 'relay_oauth_jwks_fetch_failures_total',
    help: 'Failed fetches of the identity provider metadata or signing keys.',
  }),
  makeCounterProvider({
    name: 'relay_oauth_documents_too_large_total',
    help: 'IdP metadata documents or key sets refused for passing RELAY_OAUTH_MAX_DOCUMENT_BYTES.',
  }),
  // Several replicas: all stay 0 without RELAY_REDIS_URL.
  makeGaugeProvider({
    name: 'relay_redis_up',
    help: '1 while this replica reaches Redis and its last publish succeeded, else 0.',
  }),
  makeCounterProvider({
    name: 'relay_redis_publish_failures_total',
    help: 'Writes of this replica to Redis that failed while it was reachable, by reason (OOM: Redis is full).',
    labelNames: ['reason'],
  }),
  makeCounterProvider({
    name: 'relay_forwarded_requests_total',
    help: 'Client requests passed to the replica holding the agent connection or session, by outcome.',
    labelNames: ['outcome'],
  }),
  makeCounterProvider({
    name: 'relay_unresponsive_peers_total',
    help: 'Replicas taken out of rotation here: a request passed to one got no answer in time, nor did a ping.',
  }),
  makeCounterProvider({
    name: 'relay_redis_refusals_total',
    help: 'Client requests answered 503 because Redis (the shared state) was unreachable.',
  }),
  makeCounterProvider({
    name: 'relay_peer_auth_failures_total',
    help: 'Requests refused because they claimed to come from a replica without its secret.',
  }),
];
