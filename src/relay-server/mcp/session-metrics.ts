import { getToken } from '@willsoto/nestjs-prometheus';
import { Gauge } from 'prom-client';
import { RELAY_CONFIG, type RelayConfig } from '../config/relay-config.js';
import { SessionStore } from './session-store.service.js';

/** Counted when scraped, so no path that opens or ends a session keeps a gauge in step. */
export const sessionMetricProviders = [
  {
    provide: getToken('relay_mcp_sessions'),
    inject: [SessionStore, RELAY_CONFIG],
    useFactory: (sessions: SessionStore, config: RelayConfig) =>
      new Gauge({
        name: 'relay_mcp_sessions',
        help: 'Open MCP client sessions (Mcp-Session-Id), by agent; 0 for a configured agent without one.',
        labelNames: ['agent'],
        collect() {
          this.reset();
          const agents = config.agents.map((agent) => agent.name);
          for (const [agent, count] of sessions.countByAgent(agents)) this.set({ agent }, count);
        },
      }),
  },
];
