/**
 * In a reconnect storm the relay keeps connections waiting for a TLS turn; the agent must wait
 * longer than that, so that each agent is served or refused by the relay and never gives up first
 * (giving up costs it a backoff and the relay a handshake started again).
 */
import { expect, it } from 'vitest';
import { DEFAULT_RELAY_TIMINGS } from '../src/agent/relay/agent-relay-client.js';
import { loadRelayConfig } from '../src/relay-server/config/load-relay-config.js';
import { sha256Entry as entry } from './support/relay-process.js';

it("the agent waits for its opening handshake longer than the relay's default wait for a turn", () => {
  const config = loadRelayConfig({
    RELAY_AGENTS: JSON.stringify({ shop: entry('a'.repeat(40)) }),
    RELAY_CLIENTS: JSON.stringify({ alice: { tokens: entry('c'.repeat(40)), agents: ['shop'] } }),
  });
  const relayWaitMs = config.connections.tlsHandshakes.maxWaitMs;
  // At the chart's 250 handshakes a second, 6,250 connections get a turn within the wait.
  expect(relayWaitMs).toBe(25_000);
  // A turn taken at the last moment still leaves the agent time for the handshake itself.
  expect(DEFAULT_RELAY_TIMINGS.handshakeTimeoutMs - relayWaitMs).toBeGreaterThanOrEqual(5_000);
});
