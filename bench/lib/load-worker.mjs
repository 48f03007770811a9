/**
 * The load generator, in its own process so it never shares an event loop with the process
 * it measures. It takes jobs over IPC from run.mjs and drives them with autocannon.
 *
 * autocannon's own histogram rounds to whole milliseconds, so each response's latency is kept
 * from its 'response' event (a float from process.hrtime) and the percentiles are computed here.
 */
import autocannon from 'autocannon';
import { plantBody, plantId } from './ids.mjs';

process.on('message', (job) => {
  runJob(job).then(
    (result) => process.send({ id: job.id, result }),
    (error) => process.send({ id: job.id, error: String(error?.stack ?? error) }),
  );
});

/**
 * job: { url, token, kind: 'post' | 'get' | 'mix', connections, duration (s) or amount,
 *        runBase (first n for new plants), readBase and readCount (n of plants to read) }
 */
function runJob(job) {
  let next = 0;
  const authorization = `Bearer ${job.token}`;
  // Fresh headers every time: autocannon writes Content-Length into the headers object it was
  // given, and a stale one on a GET makes the server wait for a body that never comes.
  const newPlant = (request) => {
    request.headers = { authorization, 'content-type': 'application/json' };
    request.method = 'POST';
    request.path = '/plants';
    request.body = plantBody(job.runBase + next++, job.ids);
    return request;
  };
  const readPlant = (request) => {
    request.headers = { authorization };
    request.method = 'GET';
    request.path = `/plants/${plantId(job.readBase + (next++ % job.readCount), job.ids)}`;
    request.body = undefined;
    return request;
  };
  let mixCount = 0;
  const setupRequest = {
    post: newPlant,
    get: readPlant,
    // 80% reads, 20% writes, interleaved evenly.
    mix: (request) => (mixCount++ % 5 === 4 ? newPlant(request) : readPlant(request)),
  }[job.kind];

  const latencies = [];
  const statuses = {};
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const instance = autocannon(
      {
        url: job.url,
        connections: job.connections,
        ...(job.amount ? { amount: job.amount } : { duration: job.duration }),
        timeout: 10,
        requests: [{ setupRequest }],
      },
      (error, result) => {
        if (error) return reject(error);
        const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
        const sorted = Float64Array.from(latencies).sort();
        const pct = (p) =>
          sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : null;
        const ok = Object.entries(statuses)
          .filter(([code]) => code.startsWith('2'))
          .reduce((sum, [, count]) => sum + count, 0);
        resolve({
          responses: latencies.length,
          ok,
          rps: latencies.length / elapsedS,
          okRps: ok / elapsedS,
          elapsedS,
          p50: pct(0.5),
          p90: pct(0.9),
          p99: pct(0.99),
          max: sorted.length ? sorted[sorted.length - 1] : null,
          statuses,
          non2xx: latencies.length - ok,
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      latencies.push(responseTimeMs);
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
    });
  });
}
