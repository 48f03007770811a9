export function median(values) {
  const sorted = values
    .filter((v) => typeof v === 'number' && Number.isFinite(v))
    .sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Medians over the rounds of one target in one scenario; error counts are summed. */
export function summarize(runs) {
  const sum = (key) => runs.reduce((total, run) => total + (run[key] ?? 0), 0);
  return {
    runs: runs.length,
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p90: median(runs.map((r) => r.p90)),
    p99: median(runs.map((r) => r.p99)),
    max: Math.max(...runs.map((r) => r.max ?? 0)),
    responses: sum('responses'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    rpsPerRound: runs.map((r) => Math.round(r.rps)),
    cpuUs: median(runs.map((r) => r.cpuUsPerRequest)),
    cpuUsPerRound: runs.map((r) =>
      r.cpuUsPerRequest == null ? '-' : Math.round(r.cpuUsPerRequest),
    ),
  };
}
