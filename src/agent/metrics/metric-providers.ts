import {
  getToken,
  makeCounterProvider,
  makeGaugeProvider,
  makeHistogramProvider,
} from '@willsoto/nestjs-prometheus';
import { Gauge } from 'prom-client';
import { DatabasePingService } from '../../database/database-ping.service.js';

/**
 * Every application metric, registered once. Names follow Prometheus conventions (snake_case,
 * `_total` counters, `_seconds` units); labels are low-cardinality: route templates, never ids.
 */
export const metricProviders = [
  makeCounterProvider({
    name: 'http_requests_total',
    help: 'API requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'],
  }),
  makeHistogramProvider({
    name: 'http_request_duration_seconds',
    help: 'API request duration, by method, route template and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  }),
  makeCounterProvider({ name: 'plants_created_total', help: 'Plants created.' }),
  makeCounterProvider({
    name: 'auth_failures_total',
    help: 'API requests refused for a missing or invalid bearer token.',
  }),
  {
    // db_up reads the last known state when scraped: a scrape never queries the database.
    provide: getToken('db_up'),
    inject: [DatabasePingService],
    useFactory: (ping: DatabasePingService) =>
      new Gauge({
        name: 'db_up',
        help: '1 when the database answered its last check or query, else 0.',
        collect() {
          this.set(ping.lastResult.up ? 1 : 0);
        },
      }),
  },
  makeGaugeProvider({
    name: 'mcp_server_up',
    help: '1 while the MCP server is initialized and answering, else 0.',
    labelNames: ['server'],
  }),
  makeCounterProvider({
    name: 'mcp_server_restarts_total',
    help: 'Restarts of the MCP server after an exit or a failed ping.',
    labelNames: ['server'],
  }),
  makeGaugeProvider({
    name: 'mcp_server_tools',
    help: 'Tools the MCP server offers.',
    labelNames: ['server'],
  }),
  makeGaugeProvider({
    name: 'agent_server_connected',
    help: "1 while the connection to the agent's server is open, else 0.",
  }),
];
