/**
 * The webhook-overhead bench's receiver, in a process of its own (as a receiver is on another
 * machine in real use): answers 204 to every POST and, when asked over IPC, says how many it
 * got and its own CPU time, so the bench can tell its cost from the service's. It also keeps
 * when each plant's notice arrived (by the plant id in the body), for the delivery lag: asked
 * `lags` with the times the load generator got each plant's 200, it answers the lag's
 * percentiles and forgets them.
 */
import { createServer } from 'node:http';

let delivered = 0;
/** Plant id -> arrival time (ms since the epoch, sub-millisecond), this run's only. */
let arrivals = new Map();
const wallMs = () => performance.timeOrigin + performance.now();
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    delivered++;
    const id = /"id":(\d+)/.exec(Buffer.concat(chunks).toString('latin1'))?.[1];
    // The first arrival counts: a retry (if any) is not the lag.
    if (id !== undefined && !arrivals.has(id)) arrivals.set(id, wallMs());
    res.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (message) => {
  if (message === 'stats') {
    const { user, system } = process.cpuUsage();
    process.send({ delivered, cpuUs: user + system, distinct: arrivals.size });
  } else if (message?.type === 'lags') {
    // message.acked: [plant id, ms since the epoch its 200 arrived at the load generator].
    const lags = [];
    for (const [id, at] of message.acked) {
      const arrived = arrivals.get(String(id));
      if (arrived !== undefined) lags.push(arrived - at);
    }
    lags.sort((a, b) => a - b);
    const at = (q) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? NaN;
    process.send({ count: lags.length, p50: at(0.5), p99: at(0.99), max: lags.at(-1) ?? NaN });
    arrivals = new Map();
  } else if (message === 'close') server.close(() => process.exit(0));
});
