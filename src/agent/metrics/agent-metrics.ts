import { getToken, makeCounterProvider, makeGaugeProvider } from '@willsoto/nestjs-prometheus';
import { Gauge } from 'prom-client';
import { DatabasePingService } from '../../database/database-ping.service.js';

/** The agent's metrics: the database's last state, the MCP servers, the relay connection. */
export const agentMetricProviders = [
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
    name: 'mcp_server_instances',
    help: 'Processes a per-client MCP server runs for its clients now (one per client).',
    labelNames: ['server'],
  }),
  makeCounterProvider({
    name: 'mcp_server_instances_refused_total',
    help: "Clients' requests refused a process of their own: the server's maxInstances ran (max_instances), or it did not start (start_failed).",
    labelNames: ['server', 'reason'],
  }),
  makeCounterProvider({
    name: 'agent_mcp_stdin_dropped_total',
    help: "Relayed messages not written to an MCP server's stdin: SERVICE_MCP_STDIN_MAX_BYTES were waiting there (a request is answered -32005, a notification dropped).",
    labelNames: ['server', 'kind'],
  }),
  makeCounterProvider({
    name: 'agent_server_send_dropped_total',
    help: "MCP servers' messages not sent to the agent's server: SERVICE_SERVER_SEND_MAX_BYTES were queued on the connection (an answer becomes a -32005 error, a notification is dropped).",
    labelNames: ['server', 'kind'],
  }),
  makeCounterProvider({
    name: 'agent_mcp_client_requests_total',
    help: "MCP servers' requests for their client (sampling, elicitation, roots), by outcome: relayed, answered, no_client, ambiguous (several clients in flight), no_capability, timeout (SERVICE_MCP_CLIENT_TIMEOUT_SECONDS), refused.",
    labelNames: ['server', 'outcome'],
  }),
  makeGaugeProvider({
    name: 'agent_server_connected',
    help: "1 while the connection to the agent's server is open, else 0.",
  }),
];
