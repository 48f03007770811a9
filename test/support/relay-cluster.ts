import { metric, waitFor } from '../fixtures/mcp-e2e-support.js';
import { EchoAgent } from '../fixtures/relay-server/echo-agent.js';
import { redisAvailable, TestRedis, untilAgentPublished } from './redis.js';
import { type RunningRelay, startRelay } from './relay-process.js';

/** A 2025-11-25 `initialize` request, as a raw client sends it. */
export function initializeMessage(id: string | number = 1, clientName = 't') {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: clientName, version: '1' },
    },
  };
}

export interface ClusterOptions {
  /** Each replica's environment (RELAY_REDIS_URL is added), by its index. */
  env: (index: number) => Record<string, string>;
  /** Node options of each replica, by its index. */
  nodeArgs?: (index: number) => string[];
  /** `shop`'s agent token: an EchoAgent connects with it to the last replica. */
  agentToken?: string;
  /** The CA of the replicas' certificate, when they serve TLS (the agent dials `wss://`). */
  caPem?: string;
}

/**
 * Replicas of the built relay on a throwaway Redis, and the agent `shop` connected to the last
 * one; started once its replica has published it in Redis, so the others can pass requests on.
 */
export class RelayClusterUnderTest {
  readonly redis = new TestRedis();
  readonly relays: RunningRelay[] = [];
  agent: EchoAgent | undefined;

  async start(options: ClusterOptions, replicas = 2): Promise<void> {
    if (!redisAvailable) return;
    await this.redis.start();
    const started = await Promise.all(
      Array.from({ length: replicas }, (_, index) =>
        startRelay({
          nodeArgs: options.nodeArgs?.(index),
          env: { ...options.env(index), RELAY_REDIS_URL: this.redis.url },
        }),
      ),
    );
    this.relays.push(...started);
    // /health answers 200 once Redis is reachable; a replica places requests only after its
    // first refresh has read the peer secret, which relay_redis_up says.
    await Promise.all(started.map((relay) => untilRefreshed(relay)));
    if (options.agentToken) await this.connectAgent(options.agentToken, options.caPem);
  }

  /** The replica the agent is connected to. */
  get holder(): RunningRelay {
    const holder = this.relays.at(-1);
    if (!holder) throw new Error('no relays');
    return holder;
  }

  async stop(): Promise<void> {
    this.agent?.stop();
    await Promise.all(this.relays.map((relay) => relay.stop()));
    await this.redis.close();
  }

  private async connectAgent(token: string, caPem: string | undefined): Promise<void> {
    const { port } = this.holder;
    const url = caPem
      ? () => `wss://localhost:${port}/agent/v1/connect`
      : () => `ws://127.0.0.1:${port}/agent/v1/connect`;
    this.agent = new EchoAgent(url, token, 'b', ['echo'], undefined, caPem);
    await this.agent.start();
    await untilAgentPublished(this.redis.url, 'shop');
  }
}

/** Whether the replica has refreshed from Redis since it last (re)connected to it. */
export async function refreshed(relay: RunningRelay): Promise<boolean> {
  return (await metric(relay.metricsUrl, 'relay_redis_up')) === 1;
}

/** Until the replica has refreshed from Redis since it last (re)connected to it. */
export async function untilRefreshed(relay: RunningRelay): Promise<void> {
  await waitFor(() => refreshed(relay), 'the replica refreshed from Redis');
}
