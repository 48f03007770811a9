import { makeCounterProvider, makeGaugeProvider } from '@willsoto/nestjs-prometheus';

/** Metrics of a relay of several replicas (all stay 0 without RELAY_REDIS_URL). */
export const clusterMetricProviders = [
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
