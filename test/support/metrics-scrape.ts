/**
 * What a process exports on GET /metrics (the Prometheus text format): every series name a
 * query may use (a histogram's _bucket, _sum and _count included) and, per name, the label
 * names its samples carry.
 */
export interface Exported {
  /** Series name -> label names seen on its samples. */
  labels: Map<string, Set<string>>;
  /** Series names with at least one sample (a counter nothing has counted yet has none). */
  sampled: Set<string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g;

export function parseExposition(text: string): Exported {
  const labels = new Map<string, Set<string>>();
  const sampled = new Set<string>();
  const names = (name: string) => {
    let set = labels.get(name);
    if (!set) labels.set(name, (set = new Set()));
    return set;
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, family = '', kind] = type;
      const suffixes = kind === 'histogram' || kind === 'summary' ? ['_sum', '_count'] : [''];
      if (kind === 'histogram') suffixes.push('_bucket');
      for (const suffix of suffixes) names(`${family}${suffix}`);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample || line.startsWith('#')) continue;
    const set = names(sample[1] ?? '');
    sampled.add(sample[1] ?? '');
    for (const match of (sample[2] ?? '').matchAll(LABEL)) set.add(match[1] ?? '');
  }
  return { labels, sampled };
}

/** Both processes' names in one: for a file whose queries may name either's series. */
export function mergeExported(...all: Exported[]): Exported {
  const labels = new Map<string, Set<string>>();
  for (const { labels: each } of all) {
    for (const [name, set] of each)
      labels.set(name, new Set([...(labels.get(name) ?? []), ...set]));
  }
  return { labels, sampled: new Set(all.flatMap((each) => [...each.sampled])) };
}
