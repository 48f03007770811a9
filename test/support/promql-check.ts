import { parser } from '@prometheus-io/lezer-promql';
import type { Exported } from './metrics-scrape.js';

/**
 * Checks PromQL expressions against what the processes export, with the parser of Prometheus's
 * own UI (@prometheus-io/lezer-promql): each must parse, name only exported series (or
 * `recorded` ones), and use only label names those series carry.
 */

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

/**
 * Labels Prometheus adds to every scraped series: job and instance always, the rest from the
 * Prometheus Operator's ServiceMonitor (the chart's way to scrape).
 */
export const TARGET_LABELS = ['job', 'instance', 'namespace', 'pod', 'service', 'container'];

/** Series Prometheus itself writes for every target; they carry the target labels only. */
const SCRAPE_SERIES = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);

export interface Matcher {
  label: string;
  op: string;
  value: string;
}

export interface Selector {
  name: string | undefined;
  matchers: Matcher[];
}

export interface ParsedPromql {
  /** Syntax errors, each with the rest of the expression from where it starts. */
  errors: string[];
  selectors: Selector[];
  /** Label names of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right`. */
  grouping: string[];
  /** Labels the expression itself writes: label_replace's and label_join's destinations. */
  written: string[];
}

export function parsePromql(expr: string): ParsedPromql {
  const parsed: ParsedPromql = { errors: [], selectors: [], grouping: [], written: [] };
  parser
    .parse(expr)
    .topNode.cursor()
    .iterate((ref) => {
      if (ref.type.isError)
        parsed.errors.push(`does not parse at ${ref.from}: ${expr.slice(ref.from)}`);
      if (ref.name === 'VectorSelector') parsed.selectors.push(selectorOf(ref.node, expr));
      if (ref.name === 'LabelReplace' || ref.name === 'LabelJoin') {
        // FunctionIdentifier -> FunctionCall, whose body's first string is the destination.
        const body = ref.node.parent?.parent?.getChild('FunctionCallBody');
        const destination = body?.getChild('StringLiteral');
        if (destination) parsed.written.push(text(destination, expr).slice(1, -1));
      }
      if (ref.name === 'GroupingLabels') {
        for (const label of ref.node.getChildren('LabelName')) {
          parsed.grouping.push(text(label, expr));
        }
      }
    });
  return parsed;
}

export interface CheckContext {
  exported: Exported;
  /** Series defined by recording rules (`record:`), allowed as names. */
  recorded?: Set<string>;
}

export function checkPromql(expr: string, context: CheckContext): string[] {
  const { errors, selectors, grouping, written } = parsePromql(expr);
  const problems = [...errors];
  const { labels, sampled } = context.exported;
  const every = new Set([...labels.values()].flatMap((set) => [...set]));
  const known = (name: string) =>
    labels.has(name) || context.recorded?.has(name) === true || SCRAPE_SERIES.has(name);
  const allowedFor = (name: string | undefined) => {
    if (name !== undefined && SCRAPE_SERIES.has(name)) return new Set(TARGET_LABELS);
    // A family without a sample yet (a counter nothing has counted) shows no label names:
    // then any label the process exports on some series is accepted for it.
    const seen = name !== undefined && sampled.has(name) ? (labels.get(name) ?? []) : every;
    return new Set([...TARGET_LABELS, ...seen]);
  };
  for (const { name, matchers } of selectors) {
    if (name !== undefined && !known(name))
      problems.push(`names ${name}, which no process exports`);
    const allowed = allowedFor(name);
    for (const { label } of matchers.filter((m) => !allowed.has(m.label))) {
      problems.push(`matches label ${label}, which ${name ?? 'no series'} does not carry`);
    }
  }
  const inExpression = new Set([
    ...selectors.flatMap(({ name }) => [...allowedFor(name)]),
    ...written,
  ]);
  for (const label of grouping.filter((l) => !inExpression.has(l))) {
    problems.push(`groups by ${label}, which none of its series carries`);
  }
  return problems;
}

function selectorOf(node: SyntaxNode, expr: string): Selector {
  const identifier = node.getChild('Identifier');
  const matchers = (node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []).map(
    (m) => ({
      label: text(m.getChild('LabelName'), expr),
      op: text(m.getChild('MatchOp'), expr),
      // The literal without its quotes, escapes left as written: enough to compare "$job".
      value: text(m.getChild('StringLiteral'), expr).slice(1, -1),
    }),
  );
  return { name: identifier ? text(identifier, expr) : undefined, matchers };
}

const text = (node: SyntaxNode | null, expr: string) =>
  node ? expr.slice(node.from, node.to) : '';
