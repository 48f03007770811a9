/**
 * A bystander: another tenant's client calling `echo` of agent `lab` at a steady rate through
 * the relay while something else (a reconnect storm) happens there. Its latencies, by the time
 * each call went out, show what that costs everyone else.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { RawMcpClient } from './raw-mcp-client.mjs';
import { TOKENS, startSimAgent, untilEchoUp } from './relay-path.mjs';

const call = (id) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`;

/** Starts agent `lab` (simulated) and one client of it on `relay`, calling `perSecond` times a second. */
export async function startBystander({ relay, ca, perSecond = 20 }) {
  const agent = startSimAgent({ relay, ca });
  await untilEchoUp(relay);
  const client = new RawMcpClient({
    port: relay.port,
    ca: ca.ca,
    path: '/mcp/lab/echo',
    token: TOKENS.client,
  });
  await client.connect();
  await client.initialize();
  const calls = [];
  let stopped = false;
  const loop = (async () => {
    for (let id = 1; !stopped; id++) {
      const at = performance.now();
      const answer = await client.post(call(id)).catch(() => undefined);
      const ms = performance.now() - at;
      calls.push({ at, ms, ok: answer?.status === 200 && answer.body.includes('"result"') });
      await sleep(Math.max(0, 1000 / perSecond - ms));
    }
  })();
  /** p50, p99 and max in ms, and failed calls, of the calls sent in [from, to). */
  const between = (from, to) => {
    const window = calls.filter((c) => c.at >= from && c.at < to);
    const ms = window.map((c) => c.ms).sort((a, b) => a - b);
    const at = (q) =>
      Number((ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? NaN).toFixed(1));
    return {
      calls: ms.length,
      p50: at(0.5),
      p99: at(0.99),
      max: at(1),
      failed: window.filter((c) => !c.ok).length,
    };
  };
  const stop = async () => {
    stopped = true;
    await loop;
    client.close();
    await agent.stop();
  };
  return { between, stop };
}
